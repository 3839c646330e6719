"""The cold restart of one entity-scale store in place (no copy: at 1M a copy costs minutes the
run may not have): `polyg serve` spawned on the data dir with no database running, then, as
entity_scale.py measures a size, the first answered call, full search, idle memory, and (if time
allows) the calls, 10 QPS and the burst; a run stopped by --give-up-at keeps what it measured.
Prints the JSON of what it measured; nothing is saved.

Usage: .venv/bin/python bench/latency/entity_scale_restart.py --data-dir DIR --n N [--give-up-at HH:MM]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.latency.entity_scale import GiveUp, measure_dir, parse_args
from bench.lib.machine import machine_info
from bench.lib.procs import dir_size_mb
from bench.lib.smoke import SMOKE_HELP, smoke_store


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path)
    p.add_argument("--n", type=int)
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    own, rest = p.parse_known_args()
    if own.smoke:
        own.data_dir, own.n = smoke_store("scale-restart"), 200
        rest = ["--smoke"]
    elif own.data_dir is None or own.n is None:
        p.error("--data-dir and --n are required (or --smoke)")
    args = parse_args(["--sizes", str(own.n), *rest])
    give_up = GiveUp(args.give_up_at)
    out = {"machine": machine_info(), "data_dir_mb": dir_size_mb(own.data_dir)}
    out.update(asyncio.run(measure_dir(args, own.n, own.data_dir, give_up)))
    print(json.dumps(out, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
