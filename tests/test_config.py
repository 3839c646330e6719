"""polyg.config.load_settings: flags > environment > YAML file > defaults, spec env names, errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from polyg.config import ALL_TOOLSETS, Settings, load_settings
from polyg.errors import ConfigError, InvalidConfigFormat, MissingConfigFile

SPEC_ENV = ("PORT", "LOG_LEVEL", "EMBEDDING_MODEL")


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No developer configuration leaks in: no POLYG_*/FALKORDB_*/spec variables, temp XDG dirs."""
    for name in list(os.environ):
        if name.startswith(("POLYG_", "FALKORDB_")) or name in SPEC_ENV:
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path


def write_yaml(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults(clean_env: Path) -> None:
    s = load_settings()
    assert isinstance(s, Settings)
    assert s.project == "default"
    assert s.toolsets == ["kg", "memory"]
    assert s.store is None and s.server_url is None
    assert s.data_dir == clean_env / "data" / "polyg"
    assert s.resolved_log_dir == clean_env / "data" / "polyg" / "logs"
    assert s.transport == "stdio"
    assert (s.host, s.port) == ("127.0.0.1", 8765)
    assert s.api_key is None
    assert s.allowed_origins == []
    assert s.log_level == "INFO"
    assert s.embedding_provider == "minilm"
    assert s.embedding_model is None
    assert s.falkordb_port == 6379


def test_data_dir_falls_back_to_home(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_DATA_HOME")
    assert load_settings().data_dir == clean_env / "home" / ".local" / "share" / "polyg"


def test_yaml_overrides_defaults(tmp_path: Path) -> None:
    config = write_yaml(
        tmp_path / "c.yaml",
        "project: from-yaml\nport: 9001\nlog-level: debug\ntoolsets: [kg]\nallowed_origins: [http://app.example]\n",
    )
    s = load_settings(config)
    assert s.project == "from-yaml"
    assert s.port == 9001
    assert s.log_level == "DEBUG"
    assert s.toolsets == ["kg"]
    assert s.allowed_origins == ["http://app.example"]
    assert s.host == "127.0.0.1"  # untouched fields keep their defaults


def test_env_overrides_yaml_and_flags_override_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_yaml(tmp_path / "c.yaml", "project: yaml\nport: 9001\nhost: 127.0.0.2\nlog_level: ERROR\n")
    monkeypatch.setenv("POLYG_PROJECT", "env")
    monkeypatch.setenv("POLYG_PORT", "9002")
    s = load_settings(config)
    assert (s.project, s.port, s.host, s.log_level) == ("env", 9002, "127.0.0.2", "ERROR")
    s = load_settings(config, project="flag", port=None, host=None)
    # A flag given wins; a flag not given (None) leaves the environment's value.
    assert (s.project, s.port, s.host) == ("flag", 9002, "127.0.0.2")
    s = load_settings(config, port=9003, log_level="warning")
    assert (s.port, s.log_level) == (9003, "WARNING")


def test_spec_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FALKORDB_HOST", "db.internal")
    monkeypatch.setenv("FALKORDB_PORT", "6380")
    monkeypatch.setenv("FALKORDB_PASSWORD", "s3cret")
    monkeypatch.setenv("PORT", "9100")
    monkeypatch.setenv("LOG_LEVEL", "debug")
    monkeypatch.setenv("EMBEDDING_MODEL", "text-embedding-3-small")
    s = load_settings()
    assert s.server_url == "falkor://db.internal:6380"
    assert s.falkordb_password == "s3cret"
    assert s.port == 9100
    assert s.log_level == "DEBUG"
    assert s.embedding_model == "text-embedding-3-small"


def test_falkordb_port_alone_keeps_the_embedded_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FALKORDB_PORT", "6380")
    assert load_settings().server_url is None


def test_store_url_wins_over_falkordb_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FALKORDB_HOST", "db.internal")
    assert load_settings(store="falkor://other:7000").server_url == "falkor://other:7000"
    monkeypatch.setenv("POLYG_STORE", "falkor://env:7001")
    assert load_settings().server_url == "falkor://env:7001"


def test_polyg_names_win_over_spec_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORT", "9100")
    monkeypatch.setenv("POLYG_PORT", "9200")
    monkeypatch.setenv("LOG_LEVEL", "ERROR")
    monkeypatch.setenv("POLYG_LOG_LEVEL", "DEBUG")
    s = load_settings()
    assert (s.port, s.log_level) == (9200, "DEBUG")


def test_spec_env_names_beat_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_yaml(tmp_path / "c.yaml", "port: 9001\nfalkordb_host: yaml-host\nembedding_model: yaml-model\n")
    monkeypatch.setenv("PORT", "9100")
    monkeypatch.setenv("FALKORDB_HOST", "env-host")
    s = load_settings(config)
    assert s.port == 9100
    assert s.server_url == "falkor://env-host:6379"
    assert s.embedding_model == "yaml-model"


def test_config_file_from_env_and_from_xdg(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = write_yaml(clean_env / "config" / "polyg" / "config.yaml", "project: xdg\n")
    assert load_settings().project == "xdg"
    explicit = write_yaml(clean_env / "elsewhere.yaml", "project: explicit-env\n")
    monkeypatch.setenv("POLYG_CONFIG", str(explicit))
    assert load_settings().project == "explicit-env"
    flag = write_yaml(clean_env / "flag.yaml", "project: explicit-flag\n")
    assert load_settings(flag).project == "explicit-flag"
    assert xdg.exists()


def test_lists_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYG_TOOLSETS", "kg")
    assert load_settings().toolsets == ["kg"]
    monkeypatch.setenv("POLYG_TOOLSETS", " kg , memory-compat ")
    assert load_settings().toolsets == ["kg", "memory-compat"]
    monkeypatch.setenv("POLYG_TOOLSETS", '["kg"]')
    assert load_settings().toolsets == ["kg"]
    monkeypatch.setenv("POLYG_ALLOWED_ORIGINS", "http://a.example,http://b.example")
    assert load_settings().allowed_origins == ["http://a.example", "http://b.example"]
    assert load_settings(toolsets="memory-compat").toolsets == ["memory-compat"]
    assert load_settings(toolsets="all").toolsets == list(ALL_TOOLSETS)


def test_missing_explicit_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(MissingConfigFile) as info:
        load_settings(missing)
    assert info.value.code == 1001
    assert str(missing) in info.value.message
    monkeypatch.setenv("POLYG_CONFIG", str(missing))
    with pytest.raises(MissingConfigFile):
        load_settings()


def test_missing_default_config_file_is_fine(clean_env: Path) -> None:
    assert not (clean_env / "config" / "polyg" / "config.yaml").exists()
    assert load_settings().project == "default"


@pytest.mark.parametrize(
    "text", ["project: [unclosed\n", "a: b: c\n", "\tproject: x\n", "- a\n- b\n", "just a string\n"]
)
def test_invalid_yaml(tmp_path: Path, text: str) -> None:
    config = write_yaml(tmp_path / "bad.yaml", text)
    with pytest.raises(InvalidConfigFormat) as info:
        load_settings(config)
    assert info.value.code == 1002
    assert str(config) in info.value.message


def test_empty_yaml_means_defaults(tmp_path: Path) -> None:
    assert load_settings(write_yaml(tmp_path / "empty.yaml", "")).project == "default"


@pytest.mark.parametrize("where", ["flag", "env", "yaml"])
def test_unknown_toolset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    config = None
    kwargs = {}
    if where == "flag":
        kwargs["toolsets"] = "kg,nope"
    elif where == "env":
        monkeypatch.setenv("POLYG_TOOLSETS", "kg,nope")
    else:
        config = write_yaml(tmp_path / "c.yaml", "toolsets: [kg, nope]\n")
    with pytest.raises(ConfigError) as info:
        load_settings(config, **kwargs)
    assert info.value.code == 1003
    assert "unknown toolsets ['nope']" in info.value.message
    assert "kg" in info.value.message and "memory-compat" in info.value.message


@pytest.mark.parametrize(
    ("env", "yaml_text", "flags", "field"),
    [
        ({"POLYG_PORT": "eighty"}, None, {}, "PORT"),
        ({"PORT": "eighty"}, None, {}, "PORT"),
        ({}, "port: eighty\n", {}, "port"),
        ({}, "colour: blue\n", {}, "colour"),
        ({}, None, {"transport": "pigeon"}, "transport"),
        ({"LOG_LEVEL": "chatty"}, None, {}, "LOG_LEVEL"),
        ({"POLYG_EMBEDDING_PROVIDER": "magic"}, None, {}, "EMBEDDING_PROVIDER"),
    ],
)
def test_invalid_values_are_config_errors(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    yaml_text: str | None,
    flags: dict[str, str],
    field: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    config = write_yaml(tmp_path / "c.yaml", yaml_text) if yaml_text is not None else None
    with pytest.raises(ConfigError) as info:
        load_settings(config, **flags)
    assert info.value.code == 1003
    assert info.value.message.startswith("Invalid configuration: ")
    assert field in info.value.message


def test_recall_time_limit_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().parallel_timeout_ms == 5000
    monkeypatch.setenv("POLYG_PARALLEL_TIMEOUT_MS", "250")
    assert load_settings().parallel_timeout_ms == 250
    monkeypatch.setenv("POLYG_PARALLEL_TIMEOUT_MS", "0")
    with pytest.raises(ConfigError):
        load_settings()
