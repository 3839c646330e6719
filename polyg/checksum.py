"""sha256 verification of shipped files (models, database binaries), hashed once per file
version per process.

Hashing the 23 MB MiniLM model costs ~50 ms; cheap once, but not worth paying again each
time an embedder or a store is created (tests create many). The cache key includes mtime and size, so a
file replaced on disk is hashed again. The cache lives in memory only: a checksum cached on
disk could be tampered with together with the file it vouches for.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from polyg.errors import EmbeddingModelError, PolygError

_CHUNK = 1 << 20
_digests: dict[tuple[str, int, int], str] = {}
_digests_lock = threading.Lock()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def cached_sha256(path: Path) -> str:
    """sha256 of `path`, from the in-memory cache when the file has not changed."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    with _digests_lock:
        cached = _digests.get(key)
    if cached is not None:
        return cached
    digest = file_sha256(path)
    with _digests_lock:
        _digests[key] = digest
    return digest


def verify_sha256(path: Path, expected: str, *, what: str, error: type[PolygError] = EmbeddingModelError) -> None:
    """Raise `error` unless `path` exists and its sha256 is `expected`."""
    try:
        actual = cached_sha256(path)
    except FileNotFoundError as exc:
        raise error(
            f"{what} not found at {path}; reinstall polyg to restore it",
            details={"path": str(path)},
        ) from exc
    except OSError as exc:
        raise error(f"cannot read {what} at {path}: {exc}", details={"path": str(path)}) from exc
    if actual != expected:
        raise error(
            f"{what} at {path} is corrupt or not the pinned version "
            f"(sha256 {actual[:12]}…, expected {expected[:12]}…); reinstall polyg to restore it",
            details={"path": str(path), "sha256": actual, "expected_sha256": expected},
        )
