"""sha256 verification of shipped files (models, database binaries), hashed once per file
version per process, and once per machine while the file stays untouched.

Hashing the database binaries (63 MB) costs ~50 ms of CPU and the MiniLM model (23 MB) ~20 ms:
cheap once, but every `polyg serve` and every CLI command paid it again (a test run starts
some 200 of them). Two caches spare that:

- in memory, per process: the file's digest, keyed by its path, size, mtime, ctime and inode;
- on disk, a stamp per pinned digest (`<cache dir>/checksums/<digest>.json`): the paths and
  the stat of the files last found to have that digest. A file whose stat still matches the stamp
  is the file that was hashed: writing to it, replacing it or truncating it changes its ctime
  (which, unlike mtime, no user can set back) or its inode. A stamp is written only for a file
  that matched the pinned digest, and trusted only when the stamp and its folder belong to
  this user and no one else may write them: whoever could forge a stamp could as well edit
  the user's own files. One stamp per digest, remembering the last few paths, keeps their
  number that of the pinned files, however many copies are verified.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

from polyg.cachedir import default_cache_dir
from polyg.errors import EmbeddingModelError, PolygError

_CHUNK = 1 << 20
# A digest names its stamp file: only a well-formed one does (a sidecar could hold anything).
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
# (resolved path, size, mtime_ns, ctime_ns, inode, device): what identifies one file version.
_Identity = tuple[str, int, int, int, int, int]
_digests: dict[_Identity, str] = {}
# Whether a stamp may stand in for hashing (see `hashing_every_file`).
_trust_stamps: ContextVar[bool] = ContextVar("polyg_trust_checksum_stamps", default=True)
# Paths a stamp remembers (see `_stamp`).
_PATHS_PER_DIGEST = 8
_digests_lock = threading.Lock()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _identity(path: Path) -> _Identity:
    stat = path.stat()
    return (str(path.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev)


def cached_sha256(path: Path, expected: str | None = None) -> str:
    """sha256 of `path`, from the in-memory cache when the file has not changed, or (when the
    caller says which digest it expects) from the stamp of an earlier process that found this
    very file to have it."""
    identity = _identity(path)
    with _digests_lock:
        cached = _digests.get(identity)
    if cached is not None:
        return cached
    if expected is not None and _trust_stamps.get() and _stamped(expected, identity):
        digest = expected
    else:
        digest = file_sha256(path)
        # Stamped only if it did not change while it was hashed.
        if expected is not None and digest == expected and _identity(path) == identity:
            _stamp(expected, identity)
    with _digests_lock:
        _digests[identity] = digest
    return digest


@contextlib.contextmanager
def hashing_every_file() -> Iterator[None]:
    """Within it, every file is hashed whatever the stamps say: `polyg doctor` checks the install
    itself (a disk that flipped a bit leaves the stat as it was)."""
    token = _trust_stamps.set(False)
    try:
        yield
    finally:
        _trust_stamps.reset(token)


def _stamps_dir() -> Path:
    return default_cache_dir() / "checksums"


def _private(fd: int) -> bool:
    stat = os.fstat(fd)
    return stat.st_uid == os.getuid() and not stat.st_mode & 0o022


def _stamps(digest: str) -> dict[str, list[int]]:
    """What the trustworthy stamp of `digest` records: the stat, by path, of the files last found
    to have it; nothing when there is no stamp, or one that is unreadable or not this user's."""
    if not _SHA256_HEX.fullmatch(digest):
        return {}
    try:
        dir_fd = os.open(_stamps_dir(), os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return {}
    try:
        fd = os.open(f"{digest}.json", os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as handle:
            if not (_private(dir_fd) and _private(handle.fileno())):
                return {}
            stamps = json.loads(handle.read(64 * 1024))
        return {str(path): [int(n) for n in stat] for path, stat in stamps.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}
    finally:
        os.close(dir_fd)


def _stamped(digest: str, identity: _Identity) -> bool:
    return _stamps(digest).get(identity[0]) == list(identity[1:])


def _stamp(digest: str, identity: _Identity) -> None:
    """Record that the file `identity` has `digest` (best effort: without a writable cache, the
    next process hashes it again). The last few paths are kept, so that several installs of
    polyg on one machine (virtual environments) do not take each other's stamp."""
    if not _SHA256_HEX.fullmatch(digest):
        return
    stamps = _stamps(digest)
    stamps.pop(identity[0], None)
    stamps[identity[0]] = list(identity[1:])
    kept = dict(list(stamps.items())[-_PATHS_PER_DIGEST:])
    folder = _stamps_dir()
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Written whole, then renamed: a reader sees the old stamp or the new one (two writers
        # at once: one's path is lost, and hashed again next time).
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".stamp-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(kept, handle)
            os.replace(temporary, folder / f"{digest}.json")
        except OSError:
            Path(temporary).unlink(missing_ok=True)


def verify_sha256(path: Path, expected: str, *, what: str, error: type[PolygError] = EmbeddingModelError) -> None:
    """Raise `error` unless `path` exists and its sha256 is `expected`."""
    try:
        actual = cached_sha256(path, expected)
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
