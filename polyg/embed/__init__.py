"""Embedding providers and the factory that picks one from configuration.

Providers: "minilm" (default, local ONNX, 384 dims), "openai" (any OpenAI-compatible
endpoint), "hashing" (dependency-free feature hashing, for tests and tiny installs).
Another provider can be added with `register_embedder` without touching this package.

Importing this package is cheap: each factory imports its provider module (and that
module's heavy dependencies such as httpx or onnxruntime) only when it is called.
"""

from __future__ import annotations

from typing import Protocol

from polyg.embed.base import Embedder
from polyg.errors import ConfigError

__all__ = [
    "DEFAULT_PROVIDER",
    "Embedder",
    "EmbedderFactory",
    "available_providers",
    "create_embedder",
    "register_embedder",
]

DEFAULT_PROVIDER = "minilm"


class EmbedderFactory(Protocol):
    def __call__(
        self, *, model: str | None, base_url: str | None, api_key: str | None, dimension: int | None
    ) -> Embedder: ...


_FACTORIES: dict[str, EmbedderFactory] = {}


def register_embedder(name: str, factory: EmbedderFactory) -> None:
    """Make `factory` selectable as provider `name` (replacing any provider of that name)."""
    _FACTORIES[name.strip().lower()] = factory


def available_providers() -> list[str]:
    return sorted(_FACTORIES)


def create_embedder(
    provider: str = DEFAULT_PROVIDER,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    dimension: int | None = None,
) -> Embedder:
    """Build the embedder configured by `provider` and its options; loads nothing yet."""
    factory = _FACTORIES.get(provider.strip().lower())
    if factory is None:
        raise ConfigError(
            f"unknown embedding provider {provider!r}; choose one of {', '.join(available_providers())}",
            details={"provider": provider},
        )
    return factory(model=model, base_url=base_url, api_key=api_key, dimension=dimension)


def _minilm(*, model: str | None, base_url: str | None, api_key: str | None, dimension: int | None) -> Embedder:
    from polyg.embed.minilm import DIMENSION, MODEL_ID, MiniLMEmbedder

    # The model is fixed; refuse settings that would silently be ignored, because a store
    # built for another dimension would reject every vector later with a vaguer error.
    if model is not None and model not in (MODEL_ID, "all-MiniLM-L6-v2"):
        raise ConfigError(f"the minilm provider only runs {MODEL_ID}, not {model!r}")
    if dimension is not None and dimension != DIMENSION:
        raise ConfigError(f"{MODEL_ID} makes {DIMENSION}-dimensional vectors, not {dimension}")
    return MiniLMEmbedder()


def _openai(*, model: str | None, base_url: str | None, api_key: str | None, dimension: int | None) -> Embedder:
    from polyg.embed.openai_compat import DEFAULT_BASE_URL, DEFAULT_MODEL, OpenAICompatEmbedder

    return OpenAICompatEmbedder(
        base_url=base_url or DEFAULT_BASE_URL,
        model=model or DEFAULT_MODEL,
        api_key=api_key,
        dimension=dimension,
    )


def _hashing(*, model: str | None, base_url: str | None, api_key: str | None, dimension: int | None) -> Embedder:
    from polyg.embed.hashing import DEFAULT_DIMENSION, HashingEmbedder

    embedder = HashingEmbedder(dimension or DEFAULT_DIMENSION)
    if model is not None and model != embedder.model_id:
        raise ConfigError(f"the hashing provider makes {embedder.model_id!r} vectors, not {model!r}")
    return embedder


register_embedder("minilm", _minilm)
register_embedder("openai", _openai)
register_embedder("hashing", _hashing)
