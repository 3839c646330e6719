"""polyg's cache directory: what it derives once per machine (the int8 MiniLM copy, the
checksum stamps of polyg.checksum), kept out of the data directory."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    base = os.environ.get("POLYG_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "polyg"
