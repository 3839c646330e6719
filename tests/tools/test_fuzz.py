"""The fuzzer in CI: a seeded, bounded run over every tool of every toolset (tests/fuzz.py).

One `polyg serve --toolsets all` over stdio gets ROUNDS calls of each tool (schema-valid,
invalid and injection inputs: about 1,100 calls). Any internal error (4000), store error
(2004), result breaking its output schema, protocol error, hang or crash fails the run.
bench/tools/fuzz.py runs the same fuzzer for longer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fuzz import Report, fuzz, tools_under_test
from tests.mcp_helpers import call, ok, open_log, reap_embedded, stdio_client_for

# The run is the first test's setup: about 10 s here, several times that on a loaded machine.
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(900)]

SEED = 26
# Each tool's first three calls take each mode once (tests/fuzz.py), the rest are drawn by weight
# (valid 0.45, invalid 0.25, injection 0.30); bench/tools/fuzz.py runs the same fuzzer for longer.
ROUNDS = 20
# A call answering later than this is a hang (the slowest here take 2 s).
CALL_TIMEOUT_S = 60
CANARY_PROJECT = "fuzz-canary"  # never one of the fuzzed projects: injections must not reach it


@dataclass
class FuzzRun:
    report: Report
    tools: list[str]
    with_full_output_schema: list[str]  # tools whose page (polyg://tools/{name}) gave its schema
    canary_before: dict[str, object]
    canary_after: dict[str, object]


@pytest.fixture(scope="module")
async def run(servers_root: Path) -> AsyncIterator[FuzzRun]:
    root = servers_root / "fuzz"
    env = {"POLYG_EMBEDDING_PROVIDER": "hashing", "POLYG_LOG_LEVEL": "WARNING"}
    with open_log(root / "stderr.log") as errlog:
        try:
            async with stdio_client_for(root, "--toolsets", "all", errlog=errlog, **env) as client:
                canary = {"project_id": CANARY_PROJECT, "name": "canary", "type": "bird", "description": "sings"}
                made = (await ok(client, "create_entity", canary))["entity"]
                await ok(client, "add_observation", {**canary_ref(made), "observation": "still singing"})
                before = await ok(client, "get_entity", canary_ref(made))
                listed = await tools_under_test(client)
                tools = [t.name for t in listed]
                full = [t.name for t in listed if t.full_output_validator is not None]
                report = await fuzz(client, seed=SEED, rounds=ROUNDS, timeout_s=CALL_TIMEOUT_S)
                after = await call(client, "get_entity", canary_ref(made))
                yield FuzzRun(report, tools, full, before, after.structured)
        finally:
            reap_embedded(root / "data")


def canary_ref(entity: dict[str, object]) -> dict[str, object]:
    return {"project_id": CANARY_PROJECT, "entity_id": entity["id"]}


async def test_every_tool_was_called_in_every_mode(run: FuzzRun) -> None:
    report = run.report
    assert not report.stopped, report.stopped
    assert len(run.tools) >= 50, run.tools  # every toolset
    # Results are checked against the listing's lean output schemas and the tool pages' whole ones.
    assert run.with_full_output_schema == run.tools
    assert report.calls == ROUNDS * len(run.tools)
    for tool in run.tools:
        counts = report.per_tool[tool]
        assert all(counts[mode] > 0 for mode in ("valid", "invalid", "injection")), (tool, counts)
    # Valid inputs reach real work: most are answered, not refused.
    valid_ok = report.outcomes["valid ok"] / report.by_mode["valid"]
    assert valid_ok > 0.3, report.outcomes  # 0.52 for seed 26 here


async def test_no_call_failed(run: FuzzRun) -> None:
    findings = run.report.findings
    assert not findings, f"{len(findings)} findings (seed {SEED}):\n" + "\n".join(f.describe() for f in findings[:20])


async def test_injections_left_other_projects_alone(run: FuzzRun) -> None:
    assert run.canary_after == run.canary_before


async def test_no_schema_invalid_input_was_accepted(run: FuzzRun) -> None:
    """An input the published schema refuses is refused by the server too: a limit the schema
    shows is one the server keeps."""
    assert not run.report.accepted_invalid, run.report.accepted_invalid.most_common(10)
