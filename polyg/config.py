"""Configuration: command-line flags > environment > YAML file > defaults.

Environment variables are `POLYG_<FIELD>`; the names the specs use also work where they
apply (`FALKORDB_HOST`, `FALKORDB_PORT`, `FALKORDB_PASSWORD`, `EMBEDDING_MODEL`, `PORT`,
`LOG_LEVEL`). The YAML file is `--config`, else `POLYG_CONFIG`, else
`$XDG_CONFIG_HOME/polyg/config.yaml` when it exists. Nothing here runs at import time.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError

from polyg.access import AccessKey, check_unique
from polyg.catalog import BUILT, DEFAULT, KNOWN
from polyg.errors import ConfigError, InvalidConfigFormat, InvalidParams, MissingConfigFile
from polyg.names import check_project_id
from polyg.store.addresses import host_port

# Every toolset built so far (`--toolsets all`), and the ones served when none are named
# (polyg.catalog lists them all and says why the default is what it is).
ALL_TOOLSETS = BUILT
DEFAULT_TOOLSETS = DEFAULT


def _xdg(var: str, fallback: str) -> Path:
    base = os.environ.get(var)
    return Path(base) if base else Path.home() / fallback


def default_data_dir() -> Path:
    return _xdg("XDG_DATA_HOME", ".local/share") / "polyg"


def default_config_file() -> Path:
    return _xdg("XDG_CONFIG_HOME", ".config") / "polyg" / "config.yaml"


def _env(field: str, *spec_names: str) -> Any:
    return Field(validation_alias=AliasChoices(f"POLYG_{field.upper()}", *spec_names))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(extra="forbid", populate_by_name=True)

    project: str = _env("project")
    # NoDecode: the environment gives lists comma-separated (as the flags do), not only as JSON.
    toolsets: Annotated[list[str], NoDecode] = _env("toolsets")
    # Store: a `falkor://[:password@]host:port` URL selects server mode; otherwise embedded.
    store: str | None = _env("store")
    falkordb_host: str | None = _env("falkordb_host", "FALKORDB_HOST")
    falkordb_port: int = _env("falkordb_port", "FALKORDB_PORT")
    falkordb_password: str | None = _env("falkordb_password", "FALKORDB_PASSWORD")
    data_dir: Path = _env("data_dir")
    store_pool_size: int = _env("store_pool_size")
    store_timeout_s: float = _env("store_timeout_s")
    store_open_timeout_s: float = _env("store_open_timeout_s")
    # Server and cluster modes (README "Scaling out"): read-only queries to replicas (they may
    # be behind the primary), and after each write, WAIT for this many replicas
    # to confirm it, up to the timeout (0: do not wait; a failover may lose the last writes).
    read_from_replicas: bool = _env("read_from_replicas")
    # One server's replicas to read from, `host:port` each (none: those the server reports).
    store_replicas: Annotated[list[str], NoDecode] = _env("store_replicas")
    wait_replicas: int = Field(ge=0, le=16, validation_alias=AliasChoices("POLYG_WAIT_REPLICAS"))
    wait_replicas_timeout_ms: int = Field(
        ge=1, le=60_000, validation_alias=AliasChoices("POLYG_WAIT_REPLICAS_TIMEOUT_MS")
    )
    # How long a tool call waits for a store that is still loading before it says so (2005).
    store_wait_s: float = Field(gt=0, validation_alias=AliasChoices("POLYG_STORE_WAIT_S"))

    embedding_provider: Literal["minilm", "openai", "hashing"] = _env("embedding_provider")
    embedding_model: str | None = _env("embedding_model", "EMBEDDING_MODEL")
    embedding_base_url: str | None = _env("embedding_base_url")
    embedding_api_key: str | None = _env("embedding_api_key")
    embedding_dimension: int | None = _env("embedding_dimension")
    # Recently used vectors kept in memory (about 1.6 KB each); 0 turns the cache off.
    embedding_cache_entries: int = Field(ge=0, validation_alias=AliasChoices("POLYG_EMBEDDING_CACHE_ENTRIES"))
    # The memory toolset's English pipeline (remember's parser): loaded at start, so the first
    # remember does not wait for it, or (false) by the first remember, sparing its ~90 MB of RSS
    # and ~1 s of CPU to a server that is seldom told memories.
    preload_nlp: bool = _env("preload_nlp")

    # LLM (off by default: "none"); see polyg/llm. Keys are SecretStr so no repr shows them.
    llm_provider: Literal["none", "openai", "anthropic", "ollama"] = _env("llm_provider", "LLM_PROVIDER")
    llm_model: str | None = _env("llm_model", "LLM_MODEL")
    llm_base_url: str | None = _env("llm_base_url")
    llm_api_key: SecretStr | None = _env("llm_api_key")
    openai_api_key: SecretStr | None = _env("openai_api_key", "OPENAI_API_KEY")
    anthropic_api_key: SecretStr | None = _env("anthropic_api_key", "ANTHROPIC_API_KEY")
    ollama_base_url: str | None = _env("ollama_base_url", "OLLAMA_BASE_URL")
    llm_timeout_s: float = Field(gt=0, validation_alias=AliasChoices("POLYG_LLM_TIMEOUT_S"))
    llm_max_retries: int = Field(ge=0, le=10, validation_alias=AliasChoices("POLYG_LLM_MAX_RETRIES"))

    # recall: each graph's time limit; a slower graph is left out and named in the answer.
    parallel_timeout_ms: int = Field(ge=1, le=600_000, validation_alias=AliasChoices("POLYG_PARALLEL_TIMEOUT_MS"))

    transport: Literal["stdio", "http"] = _env("transport")
    host: str = _env("host")
    port: int = _env("port", "PORT")
    api_key: str | None = _env("api_key")
    # Keys scoped to projects, read-only or not, rate-limited or not (polyg.access).
    access_keys: list[AccessKey] = _env("access_keys")
    allowed_origins: Annotated[list[str], NoDecode] = _env("allowed_origins")

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = _env("log_level", "LOG_LEVEL")
    log_dir: Path | None = _env("log_dir")
    log_max_bytes: int = Field(ge=1024, validation_alias=AliasChoices("POLYG_LOG_MAX_BYTES"))
    log_backup_count: int = Field(ge=0, validation_alias=AliasChoices("POLYG_LOG_BACKUP_COUNT"))
    # Rotated log files older than this are deleted; 0 keeps them (up to log_backup_count).
    log_retention_days: float = Field(ge=0, validation_alias=AliasChoices("POLYG_LOG_RETENTION_DAYS"))

    # Retrieval (spec 001): chunks graph_retrieve returns by default, and how documents are cut.
    retrieval_limit: int = Field(ge=1, le=100, validation_alias=AliasChoices("POLYG_RETRIEVAL_LIMIT"))
    chunk_size: int = Field(ge=16, le=254, validation_alias=AliasChoices("POLYG_CHUNK_SIZE"))
    chunk_overlap: int = Field(ge=0, le=127, validation_alias=AliasChoices("POLYG_CHUNK_OVERLAP"))

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings)

    @field_validator("toolsets", mode="before")
    @classmethod
    def _split_toolsets(cls, value: Any) -> Any:
        value = _split(value)
        if isinstance(value, list) and "all" in value:
            value = list(ALL_TOOLSETS)  # every toolset, however many there are
        if value == []:
            raise ValueError(f"name at least one toolset: {', '.join(ALL_TOOLSETS)}")
        if isinstance(value, list):
            unknown = sorted(set(value) - set(KNOWN))
            if unknown:
                raise ValueError(f"unknown toolsets {unknown}; available: {', '.join(ALL_TOOLSETS)}")
            if value and not set(value) & set(BUILT):
                raise ValueError(f"toolsets {value} are not available yet; available: {', '.join(ALL_TOOLSETS)}")
        return value

    @field_validator("allowed_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: Any) -> Any:
        return _split(value)

    @field_validator("store_replicas", mode="before")
    @classmethod
    def _split_replicas(cls, value: Any) -> Any:
        value = _split(value)
        if isinstance(value, list):
            wrong = [v for v in value if not isinstance(v, str) or host_port(v) is None]
            if wrong:
                raise ValueError(f"replicas are host:port, not {wrong}")
        return value

    @field_validator("port")
    @classmethod
    def _port_in_range(cls, value: int) -> int:
        if not 1 <= value <= 65535:
            raise ValueError(f"{value} is not a TCP port (1-65535)")
        return value

    @field_validator("project")
    @classmethod
    def _project_id(cls, value: str) -> str:
        # Caught at start rather than at the first tool call.
        try:
            return check_project_id(value)
        except InvalidParams as exc:
            raise ValueError(exc.message) from None

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _distinct_keys(self) -> Settings:
        check_unique(self.access_keys, self.api_key)
        return self

    @property
    def server_url(self) -> str | None:
        """The FalkorDB server URL in server mode, None in embedded mode."""
        if self.store:
            return self.store
        if self.falkordb_host:
            return f"falkor://{self.falkordb_host}:{self.falkordb_port}"
        return None

    @property
    def resolved_log_dir(self) -> Path:
        return self.log_dir or self.data_dir / "logs"


def _split(value: Any) -> Any:
    """A list from `a,b` or a JSON list `["a", "b"]` (how the environment gives lists)."""
    if not isinstance(value, str):
        return value
    if value.strip().startswith("["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            pass
    return [part.strip() for part in value.split(",") if part.strip()]


DEFAULTS: dict[str, Any] = {
    "project": "default",
    "toolsets": list(DEFAULT_TOOLSETS),
    "store": None,
    "falkordb_host": None,
    "falkordb_port": 6379,
    "falkordb_password": None,
    "store_pool_size": 16,
    "store_timeout_s": 30.0,
    "store_open_timeout_s": 300.0,
    "store_wait_s": 30.0,
    "read_from_replicas": False,
    "store_replicas": [],
    "wait_replicas": 0,
    "wait_replicas_timeout_ms": 1000,
    "embedding_provider": "minilm",
    "embedding_model": None,
    "embedding_base_url": None,
    "embedding_api_key": None,
    "embedding_dimension": None,
    "embedding_cache_entries": 8192,
    "preload_nlp": True,
    "llm_provider": "none",
    "llm_model": None,
    "llm_base_url": None,
    "llm_api_key": None,
    "openai_api_key": None,
    "anthropic_api_key": None,
    "ollama_base_url": None,
    "llm_timeout_s": 20.0,
    "llm_max_retries": 2,
    "parallel_timeout_ms": 5000,
    "transport": "stdio",
    "host": "127.0.0.1",
    "port": 8765,
    "api_key": None,
    "access_keys": [],
    "allowed_origins": [],
    "log_level": "INFO",
    "log_dir": None,
    "log_max_bytes": 10 * 1024 * 1024,
    "log_backup_count": 5,
    "log_retention_days": 0,
    "retrieval_limit": 5,
    "chunk_size": 200,
    "chunk_overlap": 32,
}


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise MissingConfigFile(f"Configuration file {path} not found.") from exc
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise InvalidConfigFormat(f"Configuration file {path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidConfigFormat(f"Configuration file {path} must hold a mapping of settings.")
    return {str(key).replace("-", "_"): value for key, value in data.items()}


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build settings from defaults, the YAML file, the environment and `overrides` (flags)."""
    explicit = config_file or (Path(p) if (p := os.environ.get("POLYG_CONFIG")) else None)
    candidate = explicit or default_config_file()
    from_file = read_yaml(candidate) if explicit or candidate.exists() else {}
    # Spec 001's config/app.yaml and config/logging.yaml, below polyg's own file.
    from polyg.spec_config import app_settings, logging_settings

    from_spec = {**app_settings(), **logging_settings()}
    # Environment beats the file: pydantic-settings reads the environment only for fields
    # not passed in, so file values go in as defaults and flags as explicit values.
    base = {**DEFAULTS, "data_dir": default_data_dir(), **from_spec, **from_file}
    env_names = _environment_fields()
    merged = {k: v for k, v in base.items() if k not in env_names}
    merged.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return Settings(**merged)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg'].removeprefix('Value error, ')}"
            for err in exc.errors()
        )
        raise ConfigError(f"Invalid configuration: {problems}") from exc
    except SettingsError as exc:  # an environment value pydantic-settings cannot parse
        raise ConfigError(f"Invalid configuration: {exc}") from exc


def _environment_fields() -> set[str]:
    """Fields that some environment variable sets (so the environment, not the file, wins)."""
    present = set()
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else []
        if any(isinstance(c, str) and c in os.environ for c in choices):
            present.add(name)
    return present
