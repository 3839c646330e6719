"""The long fuzz run: every tool of every toolset, schema-valid, invalid and injection inputs.

The same fuzzer as `make test` runs (tests/fuzz.py, tests/tools/test_fuzz.py), for longer: one
`polyg serve --toolsets all` over stdio (embedded store, hashing vectors so that the run
measures polyg, not the model) driven by the MCP Python client; each finding (internal error
4000, store error 2004, a result breaking its output schema, a protocol error, a hang, a crash)
is printed with the arguments that caused it.

    .venv/bin/python bench/tools/fuzz.py [--seed 26] [--calls 20000] [--seconds 1800] [--no-save]
    .venv/bin/python bench/tools/fuzz.py --clients 4 [--calls 20000]     # at once, over HTTP

`--calls` is rounded up to whole rounds (one call of every tool a round). With `--clients N`
the server is served over HTTP and N clients (seeds seed..seed+N-1) fuzz the same projects at
once, so that one client's deletes meet another's reads. Results go to
bench/results/fuzz.md/.json (fuzz-clients-N with several clients). Exit status 1 when there is
any finding.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from mcp import Client

from bench.lib.env import SERVER_START_S
from bench.lib.machine import machine_info
from bench.lib.results import write_results
from bench.lib.smoke import SMOKE_HELP, smoke_env, smoke_workdir
from bench.lib.stats import fmt_ms, summarize
from tests.fuzz import Report, fuzz, tools_under_test
from tests.mcp_helpers import HttpServer, open_log, reap_embedded, stdio_client_for

TOOL_COUNT_HINT = 54


async def run(workdir: Path, *, seed: int, calls: int, seconds: float | None, timeout_s: float) -> Report:
    env = {"POLYG_EMBEDDING_PROVIDER": "hashing", "POLYG_LOG_LEVEL": "WARNING", **smoke_env()}
    with open_log(workdir / "server.log") as errlog:
        try:
            async with stdio_client_for(workdir, "--toolsets", "all", errlog=errlog, **env) as client:
                tools = len(await tools_under_test(client))
                rounds = math.ceil(calls / tools)
                print(f"{tools} tools, {rounds} rounds ({rounds * tools} calls), seed {seed}", flush=True)

                def progress(report: Report) -> None:
                    if report.calls % (tools * 20) < tools:
                        print(f"  {report.calls} calls, {len(report.findings)} findings", flush=True)

                return await fuzz(
                    client, seed=seed, rounds=rounds, seconds=seconds, timeout_s=timeout_s, progress=progress
                )
        finally:
            reap_embedded(workdir / "data")


async def run_clients(
    workdir: Path, *, seed: int, calls: int, seconds: float | None, timeout_s: float, clients: int
) -> Report:
    env = {"POLYG_EMBEDDING_PROVIDER": "hashing", "POLYG_LOG_LEVEL": "WARNING", **smoke_env()}
    server = HttpServer(workdir, args=["--toolsets", "all"], env=env).start()
    try:
        await asyncio.to_thread(server.wait_ready, SERVER_START_S)
        async with Client(server.url) as probe:
            tools = len(await tools_under_test(probe))
        rounds = math.ceil(calls / tools / clients)
        print(f"{tools} tools, {clients} clients x {rounds} rounds, seeds {seed}..{seed + clients - 1}", flush=True)

        async def one(offset: int) -> Report:
            async with Client(server.url) as client:
                return await fuzz(client, seed=seed + offset, rounds=rounds, seconds=seconds, timeout_s=timeout_s)

        return Report.merged(list(await asyncio.gather(*(one(i) for i in range(clients)))))
    finally:
        await asyncio.to_thread(server.stop)


def render(report: Report, info: dict[str, Any], clients: int = 1) -> str:
    latencies = {mode: summarize([ms / 1000 for ms in values]) for mode, values in report.latencies_ms.items()}
    lines = [
        f"# Fuzz run, seed {report.seed}, {info['date']}",
        "",
        f"polyg {info['polyg_commit']}, {info['nproc']} CPUs ({info['cpu']}). One `polyg serve --toolsets all` over "
        f"{'stdio' if clients == 1 else f'HTTP with {clients} clients at once'}, hashing vectors; "
        f"{report.calls:,} calls over {len(report.per_tool)} tools in {report.seconds:.0f} s"
        f"{' (' + report.stopped + ')' if report.stopped else ''}.",
        "",
        "| mode | calls | ok | refused (4xxx) | findings | p50 ms | p95 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, count in sorted(report.by_mode.items()):
        ok = report.outcomes.get(f"{mode} ok", 0)
        found = sum(1 for f in report.findings if f.call.mode == mode)
        stats = latencies[mode]
        lines.append(
            f"| {mode} | {count:,} | {ok:,} | {count - ok - found:,} | {found} | {fmt_ms(stats['p50_ms'])} "
            f"| {fmt_ms(stats['p95_ms'])} | {fmt_ms(stats['max_ms'])} |"
        )
    lines += ["", f"Findings: {len(report.findings)}", ""]
    lines += [f"- {finding.describe()}" for finding in report.findings[:50]]
    accepted = sum(report.accepted_invalid.values())
    lines += ["", f"Schema-invalid inputs answered as a success (not findings): {accepted}", ""]
    lines += [f"- {count} x {what}" for what, count in report.accepted_invalid.most_common(20)]
    return "\n".join([*lines, ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--calls", type=int, default=20_000, help="calls in all (rounded up to whole rounds)")
    parser.add_argument("--seconds", type=float, default=None, help="stop after the round that passes this")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds a call may take before it is a hang")
    parser.add_argument("--clients", type=int, default=1, help="clients at once (over HTTP when more than one)")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        workdir, args.calls, args.no_save = smoke_workdir("fuzz"), TOOL_COUNT_HINT, True
    else:
        import tempfile

        workdir = Path(tempfile.mkdtemp(prefix="polyg-fuzz-"))
    info = machine_info()
    limits = {"seed": args.seed, "calls": args.calls, "seconds": args.seconds, "timeout_s": args.timeout}
    if args.clients > 1:
        report = asyncio.run(run_clients(workdir, clients=args.clients, **limits))
    else:
        report = asyncio.run(run(workdir, **limits))
    markdown = render(report, info, args.clients)
    print(markdown)
    if not args.no_save:
        data = {
            "machine": info,
            "seed": report.seed,
            "clients": args.clients,
            "calls": report.calls,
            "seconds": report.seconds,
            "stopped": report.stopped,
            "outcomes": dict(report.outcomes),
            "per_tool": {tool: dict(counts) for tool, counts in report.per_tool.items()},
            "findings": [finding.describe() for finding in report.findings],
            "accepted_invalid": dict(report.accepted_invalid),
        }
        figures = {"calls": report.calls, "seconds": round(report.seconds), "findings": len(report.findings)}
        write_results(
            "fuzz", markdown, data, size=f"clients-{args.clients}" if args.clients > 1 else "", figures=figures
        )
    # A smoke run checks that the script works, not what the server does.
    sys.exit(1 if report.findings and not args.smoke else 0)


if __name__ == "__main__":
    main()
