"""`polyg init-schema` stores spec 000's initial relationship types, and leaves a type a user has
described as the user described it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from polyg.config import load_settings
from polyg.core.graph.reltypes import INITIAL
from polyg.embed import create_embedder
from polyg.runtime.app import Polyg
from tests.mcp_helpers import polyg_command, server_env

pytestmark = pytest.mark.anyio


def init_schema(root: Path, project: str) -> None:
    done = subprocess.run(
        [*polyg_command(), "init-schema", "--data-dir", str(root / "data"), "--project", project],
        capture_output=True,
        text=True,
        timeout=120,
        env=server_env(root, POLYG_EMBEDDING_PROVIDER="hashing"),
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"Schema ready for: {project}" in done.stdout


async def stored_types(root: Path, project: str, *, describe: bool = False) -> dict[str, tuple[str | None, str]]:
    settings = load_settings(None, data_dir=root / "data", log_dir=root / "logs", store=None)
    core = Polyg(settings, embedder=create_embedder("hashing"))
    try:
        s = await core.ready()
        if describe:
            await s.reltypes.create(project, "CHILD_OF", description="mine", directionality="balanced")
        return {t.name: (t.directionality, t.description) for t in await s.reltypes.all(project)}
    finally:
        await core.close()


async def test_init_schema_creates_the_initial_relationship_types(tmp_path: Path) -> None:
    init_schema(tmp_path, "kproj")
    types = await stored_types(tmp_path, "kproj", describe=True)
    assert set(types) == {name for name, *_ in INITIAL}
    assert {"CHILD_OF", "INFLUENCED_BY", "COLLABORATED_WITH", "EMPLOYED_BY", "LOCATED_IN"} <= set(types)
    assert {"USES_TEMPLATE", "CACHED_AT", "DEPENDS_ON"} <= set(types)
    assert types["INFLUENCED_BY"][0] == "weak" and types["COLLABORATED_WITH"][0] == "balanced"
    # Run again: a type the user described keeps the user's description.
    init_schema(tmp_path, "kproj")
    again = await stored_types(tmp_path, "kproj")
    assert again["CHILD_OF"] == ("balanced", "mine")
    assert again["LOCATED_IN"] == types["LOCATED_IN"]
