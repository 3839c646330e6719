"""Screenshots of every view of the graph page (/ui) on a small demo project.

Starts `polyg serve --transport http` on a fresh data directory (hashing embedder), writes the
demo project through the MCP tools, drives headless Chromium through search, neighbourhood,
expand-on-click, facts as of a date, timeline, causal chain and knowledge document, and writes one
PNG per view. Needs a Chromium binary (Debian: `apt-get install chromium`; or POLYG_CHROMIUM).

    .venv/bin/python bench/tools/ui_screenshots.py [--out DIR]

The demo is small already: --smoke (the bench smoke test's flag) runs the same walk, and only
makes a missing Chromium no error.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests


from bench.lib.env import SERVER_START_S
from bench.lib.smoke import enter_smoke_mode, smoke_env
from tests.mcp_helpers import HttpServer, authorized_client
from tests.ui.browser import Browser, find_chromium
from tests.ui.graph_demo import distinct_colours, populate, walk_views

PROJECT = "demo"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "polyg-ui-screenshots")
    parser.add_argument("--smoke", action="store_true", help="as run by the bench smoke test: no Chromium is no error")
    args = parser.parse_args()
    if args.smoke:
        enter_smoke_mode()
    chromium = find_chromium()
    if chromium is None:
        print("No Chromium found: install Debian's chromium package or set POLYG_CHROMIUM.", file=sys.stderr)
        return 0 if args.smoke else 2
    with tempfile.TemporaryDirectory(prefix="polyg-ui-") as root:
        env = {"POLYG_EMBEDDING_PROVIDER": "hashing", **smoke_env()}
        server = HttpServer(Path(root), args=["--toolsets", "kg,memory"], env=env)
        server.start()
        try:
            server.wait_ready(SERVER_START_S)

            async def fill() -> dict[str, str]:
                async with authorized_client(server.url, None) as client:
                    return await populate(client, PROJECT)

            ids = anyio.run(fill)
            with Browser(chromium) as browser:
                shots = walk_views(browser.new_page(), server.base_url, PROJECT, ids, args.out)
                failed = browser.exceptions
        finally:
            server.stop()
    for view, path in shots.items():
        print(f"{view:14} {path}  ({distinct_colours(path.read_bytes())} colours)")
    if failed:
        print(f"page exceptions: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
