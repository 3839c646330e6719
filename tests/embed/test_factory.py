"""create_embedder: provider selection from configuration and the plugin registry."""

from __future__ import annotations

import pytest

import polyg.embed
from polyg.embed import Embedder, available_providers, create_embedder, register_embedder
from polyg.embed.hashing import HashingEmbedder
from polyg.embed.minilm import MiniLMEmbedder
from polyg.embed.openai_compat import OpenAICompatEmbedder
from polyg.errors import ConfigError


def test_default_is_minilm_and_loads_nothing() -> None:
    embedder = create_embedder()
    assert isinstance(embedder, MiniLMEmbedder)
    assert embedder.model_id == "all-MiniLM-L6-v2-int8"
    assert embedder.dimension == 384
    assert not embedder.loaded  # loading is the server's (background) decision


def test_openai_defaults_and_options() -> None:
    embedder = create_embedder("openai", api_key="sk-x", dimension=1536)
    assert isinstance(embedder, OpenAICompatEmbedder)
    assert embedder.model_id == "text-embedding-3-small"
    assert embedder.dimension == 1536  # configured: no probe request
    custom = create_embedder("OpenAI", model="nomic-embed-text", base_url="http://localhost:11434/v1")
    assert custom.model_id == "nomic-embed-text"


def test_hashing_provider() -> None:
    embedder = create_embedder("hashing", dimension=64)
    assert isinstance(embedder, HashingEmbedder)
    assert embedder.dimension == 64
    assert embedder.model_id == "hashing-64"
    assert create_embedder("hashing").dimension == 384


def test_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as excinfo:
        create_embedder("word2vec")
    assert excinfo.value.code == 1003
    assert "minilm" in excinfo.value.message


def test_settings_a_provider_cannot_honour_are_refused() -> None:
    with pytest.raises(ConfigError):
        create_embedder("minilm", dimension=768)
    with pytest.raises(ConfigError):
        create_embedder("minilm", model="text-embedding-3-small")
    with pytest.raises(ConfigError):
        create_embedder("hashing", model="hashing-384", dimension=8)


def test_register_a_plugin_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    # Work on a copy of the registry so the plugin does not outlive this test.
    monkeypatch.setattr(polyg.embed, "_FACTORIES", dict(polyg.embed._FACTORIES))

    def factory(*, model: str | None, base_url: str | None, api_key: str | None, dimension: int | None) -> Embedder:
        return HashingEmbedder(dimension or 32)

    register_embedder("plugin-test", factory)
    assert "plugin-test" in available_providers()
    assert create_embedder("plugin-test").dimension == 32
