"""The configuration files spec 001 names: `config/app.yaml` and `config/logging.yaml`.

They are read in addition to polyg's own configuration (`polyg.config`), below it: a setting in
polyg's YAML file, the environment or a flag wins over the same setting here. Each is read from
the path given (`POLYG_APP_CONFIG`, `POLYG_LOGGING_CONFIG`: a missing file is error 1001), else
from `config/` in the working directory when it is there. Only the sections below are read;
other sections (another program's settings in the same file) are left alone.

    # config/app.yaml
    project: default
    falkordb: {host: localhost, port: 6379, password: secret}   # or store: falkor://host:port
    embedding: {provider: minilm, model: all-MiniLM-L6-v2}
    retrieval: {limit: 5, chunk_size: 200, chunk_overlap: 32}
    server: {transport: stdio, host: 127.0.0.1, port: 8765}

    # config/logging.yaml
    level: INFO
    dir: logs                 # relative to the working directory
    max_bytes: 10485760       # a log file is rotated at this size
    backup_count: 5           # rotated files kept
    retention_days: 14        # rotated files older than this are deleted
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from polyg.errors import ConfigError

APP_CONFIG = Path("config/app.yaml")
LOGGING_CONFIG = Path("config/logging.yaml")

# section -> key -> polyg setting
APP_SECTIONS: dict[str, dict[str, str]] = {
    "falkordb": {"host": "falkordb_host", "port": "falkordb_port", "password": "falkordb_password", "url": "store"},
    "embedding": {"provider": "embedding_provider", "model": "embedding_model", "base_url": "embedding_base_url"},
    "retrieval": {"limit": "retrieval_limit", "chunk_size": "chunk_size", "chunk_overlap": "chunk_overlap"},
    "server": {"transport": "transport", "host": "host", "port": "port"},
}
APP_TOP_LEVEL = {"project": "project", "store": "store"}
LOGGING_KEYS = {
    "level": "log_level",
    "dir": "log_dir",
    "max_bytes": "log_max_bytes",
    "backup_count": "log_backup_count",
    "retention_days": "log_retention_days",
}


def _path(env: str, default: Path) -> Path | None:
    """The file to read: named by the environment (then it must exist), else the default when present."""
    named = os.environ.get(env)
    if named:
        return Path(named)
    return default if default.is_file() else None


def _read(path: Path) -> dict[str, Any]:
    from polyg.config import read_yaml  # raises 1001 (missing) and 1002 (not YAML)

    return read_yaml(path)


def app_settings() -> dict[str, Any]:
    """Settings from the spec's app.yaml, as polyg setting names."""
    path = _path("POLYG_APP_CONFIG", APP_CONFIG)
    if path is None:
        return {}
    data = _read(path)
    out = {setting: data[key] for key, setting in APP_TOP_LEVEL.items() if key in data}
    for section, keys in APP_SECTIONS.items():
        values = data.get(section)
        if values is None:
            continue
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: section {section!r} must be a mapping of {', '.join(keys)}.")
        unknown = sorted(set(map(str, values)) - set(keys))
        if unknown:
            raise ConfigError(f"{path}: unknown keys in {section!r}: {unknown}; known: {', '.join(keys)}.")
        out.update({keys[key]: value for key, value in values.items()})
    return out


def logging_settings() -> dict[str, Any]:
    """Settings from the spec's logging.yaml, as polyg setting names."""
    path = _path("POLYG_LOGGING_CONFIG", LOGGING_CONFIG)
    if path is None:
        return {}
    data = _read(path)
    unknown = sorted(set(data) - set(LOGGING_KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown keys {unknown}; known: {', '.join(LOGGING_KEYS)}.")
    return {LOGGING_KEYS[key]: value for key, value in data.items()}
