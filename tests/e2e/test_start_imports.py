"""What a `polyg serve` process imports: only what it serves. Every test server, and every
user's start, pays for each module imported at start (a test run starts some 200 servers),
so a module only some toolsets, commands or embedders need must not creep back in.

The server runs under a wrapper that writes its `sys.modules` when the process exits; it is
driven over stdio by hand (initialize, tools/list, one tool call, then end of input), so that
it exits on its own, as a client's hang-up makes it, and the list is complete.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from polyg.embed.minilm import MiniLMEmbedder
from tests.mcp_helpers import MODEL_CACHE_DIR, serve_args, server_env

# Runs `polyg serve`, then writes the names of the modules it imported to argv[1].
WRAPPER = """
import atexit, json, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv[0] = "polyg"
from polyg.cli import main
main()
"""
EXIT_S = 120.0  # a bound for the server's exit on a loaded machine, not a timing

# Needed by no stdio server of the default toolsets at start: the NLP pipeline (the tests'
# servers are told not to preload it), the quantiser (the int8 copy exists), a JSON Schema
# validator, the toolsets not served, recall's and remember's machinery (made at the first
# recall or remember) and the memory graphs (made at the first memory tool's call).
NEVER_AT_START = (
    "spacy",
    "onnx",
    "onnxruntime.quantization",
    "jsonschema",
    "polyg.tools.graphrag",
    "polyg.tools.knowledge",
    "polyg.tools.retrieval",
    "polyg.tools.memory_compat",
    "polyg.core.memory.write",
    "polyg.core.recall.service",
    "polyg.core.memory.causal",
    "polyg.core.memory.temporal",
    "polyg.core.memory.entity_graph",
)


def served_modules(root: Path, **env: str) -> set[str]:
    """The modules of a default stdio server that answered initialize, tools/list and one tool
    call, then saw its input end."""
    root.mkdir(parents=True, exist_ok=True)
    out = root / "modules.json"
    with (root / "stderr.log").open("wb") as errlog:
        proc = subprocess.Popen(
            [sys.executable, "-c", WRAPPER, str(out), *serve_args(root / "data")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            env=server_env(root, **env),
        )
    assert proc.stdin is not None and proc.stdout is not None

    def ask(message: dict[str, Any]) -> dict[str, Any]:
        """Send `message`; with an id, the answer to it (the server's notifications skipped)."""
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        while "id" in message:
            line = proc.stdout.readline()
            assert line, (root / "stderr.log").read_text(errors="replace")
            answer: dict[str, Any] = json.loads(line)
            if answer.get("id") == message["id"]:
                return answer
        return {}

    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        assert "result" in ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert len(listed["result"]["tools"]) > 10, listed
        called = ask(
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_entities", "arguments": {}}}
        )
        assert "result" in called and not called["result"].get("isError"), called
        proc.stdin.close()  # end of input: the server closes and exits
        assert proc.wait(timeout=EXIT_S) == 0, (root / "stderr.log").read_text(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    return set(json.loads(out.read_text()))


def imported(modules: set[str], name: str) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


def test_a_default_server_imports_only_what_it_serves(tmp_path: Path) -> None:
    modules = served_modules(tmp_path, POLYG_EMBEDDING_PROVIDER="hashing")
    assert {"polyg.tools.kg", "polyg.tools.memory", "polyg.store.falkor"} <= modules  # the list is real
    assert [name for name in NEVER_AT_START if imported(modules, name)] == []
    # The hashing embedder needs no model runtime.
    assert not imported(modules, "onnxruntime")


def test_the_default_embedder_runs_its_cached_copy_without_the_quantiser(tmp_path: Path) -> None:
    # The int8 copy made now if this machine has none yet (once; the servers share the cache).
    embedder = MiniLMEmbedder(cache_dir=MODEL_CACHE_DIR)
    embedder.load()
    embedder.close()
    modules = served_modules(tmp_path)
    assert "onnxruntime" in modules  # the list is real: the model ran
    assert [name for name in NEVER_AT_START if imported(modules, name)] == []


def test_help_loads_no_configuration(tmp_path: Path) -> None:
    """`polyg --help` (and a command's) only prints: the configuration's models (pydantic and
    its settings sources) are not imported."""
    out = tmp_path / "modules.json"
    for args in (["--help"], ["serve", "--help"]):
        shown = subprocess.run(
            [sys.executable, "-c", WRAPPER, str(out), *args], capture_output=True, check=True, timeout=EXIT_S
        )
        assert b"Usage" in shown.stdout
        modules = set(json.loads(out.read_text()))
        assert "polyg.cli" in modules  # the list is real
        assert not imported(modules, "polyg.config")
        assert not imported(modules, "pydantic_settings")
