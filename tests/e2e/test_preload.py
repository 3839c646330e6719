"""`preload_nlp`: a server with the memory toolset loads the English pipeline at start (the
default; the tests' servers are told not to, tests/mcp_helpers.py), or, told not to, on its
first `remember`. Whether spaCy is in the server process is read
from the process's memory map (its compiled modules), not from anything polyg reports."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from polyg.config import load_settings
from tests.fork_runner import NO_FORK_ENV
from tests.mcp_helpers import kg_session

FAST = {"POLYG_EMBEDDING_PROVIDER": "hashing"}
# The toolset that preloads, and kg for list_entities; the others would only add to each start.
TOOLSETS = ("--toolsets", "kg,memory")
LOAD_S = 120.0  # a bound for the pipeline's load on a loaded machine, not a timing


@pytest.fixture(autouse=True)
def real_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a server process has loaded is the question: a fork of the tests' runner
    (tests/fork_runner.py) has the pipeline already."""
    monkeypatch.setenv(NO_FORK_ENV, "1")


def server_pid(root: Path) -> int:
    """The `polyg serve` process whose data directory is under `root`."""
    wanted = str(root / "data").encode()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"serve" in argv and wanted in argv:
                return int(proc.name)
    raise AssertionError(f"no polyg server for {root}")


def has_spacy(pid: int) -> bool:
    return "/spacy/" in Path(f"/proc/{pid}/maps").read_text()


def test_preloading_is_the_default(tmp_path: Path) -> None:
    assert load_settings(None, data_dir=tmp_path).preload_nlp is True  # the test servers turn it off


@pytest.mark.anyio
async def test_the_pipeline_loads_at_start_when_preloading(tmp_path: Path) -> None:
    async with kg_session("stdio", tmp_path, *TOOLSETS, POLYG_PRELOAD_NLP="true", **FAST) as kg:
        await kg.ok("list_entities", {})
        pid = server_pid(tmp_path)
        deadline = time.monotonic() + LOAD_S
        while not has_spacy(pid):  # loaded in a thread of its own, no call asked for it
            assert time.monotonic() < deadline, "the pipeline was not loaded at start"
            await anyio.sleep(0.1)


@pytest.mark.anyio
async def test_told_not_to_preload_the_pipeline_loads_at_the_first_remember(tmp_path: Path) -> None:
    async with kg_session("stdio", tmp_path, *TOOLSETS, POLYG_PRELOAD_NLP="false", **FAST) as kg:
        await kg.ok("list_entities", {})
        pid = server_pid(tmp_path)
        assert not has_spacy(pid)
        told = await kg.ok("remember", {"content": "Ada Lovelace works on the Analytical Engine."})
        assert len(told["entities_created"]) == 2 and told["facts_added"], told  # Ada, the engine; works_on
        assert has_spacy(pid)
