"""Spec 001's config/app.yaml and config/logging.yaml: read below polyg's own configuration,
their errors coded, and the log file rotated and pruned as configured."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from polyg.config import load_settings
from polyg.errors import ConfigError, InvalidConfigFormat, MissingConfigFile
from polyg.logs import RetainingFileHandler

APP_YAML = """\
project: from-app-yaml
falkordb: {host: db.internal, port: 6380}
embedding: {provider: hashing}
retrieval: {limit: 7, chunk_size: 120, chunk_overlap: 10}
neo4j: {uri: "bolt://elsewhere"}   # another program's section: left alone
"""
LOGGING_YAML = "level: DEBUG\ndir: spec-logs\nmax_bytes: 2048\nbackup_count: 3\nretention_days: 2\n"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("POLYG_", "FALKORDB_")) or name in ("LOG_LEVEL", "PORT", "EMBEDDING_MODEL"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config").mkdir()
    return tmp_path


def test_the_spec_files_in_config_are_read(workdir: Path) -> None:
    (workdir / "config" / "app.yaml").write_text(APP_YAML, encoding="utf-8")
    (workdir / "config" / "logging.yaml").write_text(LOGGING_YAML, encoding="utf-8")
    s = load_settings()
    assert (s.project, s.falkordb_host, s.falkordb_port, s.embedding_provider) == (
        "from-app-yaml",
        "db.internal",
        6380,
        "hashing",
    )
    assert (s.retrieval_limit, s.chunk_size, s.chunk_overlap) == (7, 120, 10)
    assert (s.log_level, s.log_dir, s.log_max_bytes, s.log_backup_count, s.log_retention_days) == (
        "DEBUG",
        Path("spec-logs"),
        2048,
        3,
        2,
    )


def test_polyg_configuration_wins_over_the_spec_files(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workdir / "config" / "app.yaml").write_text(APP_YAML, encoding="utf-8")
    own = workdir / "polyg.yaml"
    own.write_text("project: from-polyg-yaml\n", encoding="utf-8")
    monkeypatch.setenv("POLYG_RETRIEVAL_LIMIT", "9")
    s = load_settings(own, chunk_size=64)
    assert (s.project, s.retrieval_limit, s.chunk_size, s.falkordb_host) == ("from-polyg-yaml", 9, 64, "db.internal")


def test_without_the_files_nothing_changes(workdir: Path) -> None:
    s = load_settings()
    assert (s.project, s.retrieval_limit, s.chunk_size, s.log_retention_days) == ("default", 5, 200, 0)


def test_errors_of_the_spec_files(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYG_APP_CONFIG", str(workdir / "missing.yaml"))
    with pytest.raises(MissingConfigFile) as missing:
        load_settings()
    assert missing.value.code == 1001 and "missing.yaml not found" in missing.value.message
    (workdir / "bad.yaml").write_text("falkordb: {host: [\n", encoding="utf-8")
    monkeypatch.setenv("POLYG_APP_CONFIG", str(workdir / "bad.yaml"))
    with pytest.raises(InvalidConfigFormat) as invalid:
        load_settings()
    assert invalid.value.code == 1002
    (workdir / "typo.yaml").write_text("retrieval: {chunksize: 100}\n", encoding="utf-8")
    monkeypatch.setenv("POLYG_APP_CONFIG", str(workdir / "typo.yaml"))
    with pytest.raises(ConfigError, match="unknown keys in 'retrieval'"):
        load_settings()
    monkeypatch.delenv("POLYG_APP_CONFIG")
    (workdir / "config" / "logging.yaml").write_text("level: INFO\nrotate: daily\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown keys"):
        load_settings()


def test_log_files_rotate_at_the_size_and_old_ones_are_deleted(tmp_path: Path) -> None:
    old = tmp_path / "polyg.log.4"
    old.write_text("from long ago\n", encoding="utf-8")
    week_ago = time.time() - 7 * 86400
    os.utime(old, (week_ago, week_ago))
    handler = RetainingFileHandler(tmp_path / "polyg.log", max_bytes=200, backup_count=2, retention_s=2 * 86400)
    try:
        assert not old.exists()  # pruned when the handler starts
        for i in range(20):
            handler.emit(logging.makeLogRecord({"msg": f"line {i} " + "x" * 40}))
    finally:
        handler.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["polyg.log", "polyg.log.1", "polyg.log.2"]
