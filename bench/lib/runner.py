"""A benchmark script's run from its command line: options, smoke sizes, measure, print, save.

The lines every script repeated, once: the parser (the docstring's first paragraph, `--no-save`,
`--smoke`), the smoke run's tiny sizes, the machine's description, the measured result rendered
and printed, then (unless `--no-save` or a smoke run) bench/results/<benchmark>[-<size>].md/.json
and a row of key figures in bench/results/history.csv.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from bench.lib.machine import machine_info
from bench.lib.results import write_results
from bench.lib.smoke import SMOKE_HELP, enter_smoke_mode

Result = dict[str, Any]


def bench_parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser described by the first paragraph of `doc` (the script's docstring), with
    `--no-save` and `--smoke`; the script adds its own options."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--no-save", action="store_true", help="print the result, write no result file")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    return parser


def run_benchmark(
    benchmark: str,
    args: argparse.Namespace,
    *,
    measure: Callable[[argparse.Namespace], Coroutine[Any, Any, Result]],
    render: Callable[[Result, dict[str, Any]], str],
    figures: Callable[[Result], dict[str, Any]],
    smoke: Mapping[str, Any],
    size: str = "",
) -> int:
    """Measure with `args` (with the `smoke` values instead on a smoke run, which saves nothing),
    print the rendered result, and save it unless told not to. The script's exit code."""
    if args.smoke:
        enter_smoke_mode()
        for name, value in smoke.items():
            setattr(args, name, value)
        args.no_save = True
    info = machine_info()
    result: Result = asyncio.run(measure(args))
    markdown = render(result, info)
    print(markdown)
    if not args.no_save:
        md, _ = write_results(benchmark, markdown, {"machine": info, **result}, size=size, figures=figures(result))
        print(f"saved {md}")
    return 0
