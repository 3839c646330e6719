"""Checksums of shipped files (polyg.checksum): hashed once per machine while a file stays
untouched, and hashed again, and refused, once it changes, whatever its mtime says."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import polyg.checksum as checksum
from polyg.errors import EmbeddingModelError

CONTENT = b"pinned content " * 1000


@pytest.fixture
def hashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every file hashed, with a cache dir of the test's own and no digest cached in memory."""
    monkeypatch.setenv("POLYG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(checksum, "_digests", {})
    seen: list[Path] = []
    real = checksum.file_sha256

    def counting(path: Path) -> str:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(checksum, "file_sha256", counting)
    return seen


@pytest.fixture
def shipped(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "model.bin"
    path.write_bytes(CONTENT)
    return path, checksum.file_sha256(path)


def new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a new process starts with: no digest in memory (the stamps on disk remain)."""
    monkeypatch.setattr(checksum, "_digests", {})


def test_a_file_verified_once_is_not_hashed_by_the_next_process(
    shipped: tuple[Path, str], hashed: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, digest = shipped
    checksum.verify_sha256(path, digest, what="model")
    new_process(monkeypatch)
    checksum.verify_sha256(path, digest, what="model")
    assert hashed == [path]


def test_a_file_changed_behind_an_unchanged_mtime_and_size_is_refused(
    shipped: tuple[Path, str], hashed: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, digest = shipped
    checksum.verify_sha256(path, digest, what="model")
    before = path.stat()
    with path.open("r+b") as handle:  # same size, one byte flipped, in place (same inode)
        handle.seek(100)
        handle.write(b"P" if CONTENT[100:101] != b"P" else b"Q")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the mtime set back; the ctime moves on
    new_process(monkeypatch)
    with pytest.raises(EmbeddingModelError, match="corrupt or not the pinned version"):
        checksum.verify_sha256(path, digest, what="model")
    assert hashed == [path, path]


def test_a_file_replaced_by_another_is_hashed_again(
    shipped: tuple[Path, str], hashed: list[Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path, digest = shipped
    checksum.verify_sha256(path, digest, what="model")
    other = tmp_path / "other.bin"
    other.write_bytes(CONTENT)
    os.replace(other, path)
    new_process(monkeypatch)
    checksum.verify_sha256(path, digest, what="model")
    assert hashed == [path, path]


def test_a_mismatch_leaves_no_stamp(
    shipped: tuple[Path, str], hashed: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = shipped
    wrong = "0" * 64
    for _ in range(2):
        new_process(monkeypatch)
        with pytest.raises(EmbeddingModelError):
            checksum.verify_sha256(path, wrong, what="model")
    assert hashed == [path, path]


def test_a_stamp_others_may_write_is_not_trusted(
    shipped: tuple[Path, str], hashed: list[Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path, digest = shipped
    checksum.verify_sha256(path, digest, what="model")
    stamp = tmp_path / "cache" / "checksums" / f"{digest}.json"
    assert stamp.is_file()
    stamp.chmod(0o666)
    new_process(monkeypatch)
    checksum.verify_sha256(path, digest, what="model")
    assert hashed == [path, path]


def test_several_installs_keep_their_stamps(
    shipped: tuple[Path, str], hashed: list[Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two virtual environments hold the same pinned file: each is hashed once, not at every
    start of the other."""
    path, digest = shipped
    twin = tmp_path / "twin.bin"
    twin.write_bytes(CONTENT)
    for _ in range(3):
        new_process(monkeypatch)
        checksum.verify_sha256(path, digest, what="model")
        checksum.verify_sha256(twin, digest, what="model")
    assert hashed == [path, twin]


def test_the_doctor_hashes_every_file(
    shipped: tuple[Path, str], hashed: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`polyg doctor` checks the install itself: a stamp does not stand in for the hash there."""
    path, digest = shipped
    checksum.verify_sha256(path, digest, what="model")
    new_process(monkeypatch)
    with checksum.hashing_every_file():
        checksum.verify_sha256(path, digest, what="model")
    new_process(monkeypatch)
    checksum.verify_sha256(path, digest, what="model")  # the stamp stands again
    assert hashed == [path, path]
