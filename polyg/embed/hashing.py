"""A deterministic, dependency-free embedder based on feature hashing.

It is a real but weak embedder: texts that share words or word fragments get close vectors,
paraphrases with different words do not. It serves as a fast stand-in for MiniLM in unit
tests and as the `hashing` provider for installs too small for an ONNX runtime.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re

from polyg.embed.base import Embedder, check_texts
from polyg.errors import ConfigError

DEFAULT_DIMENSION = 384

# Word unigrams carry the meaning; character trigrams make inflections and typos
# ("trumpet"/"trumpets") land near each other. Trigrams are many per word, so they are
# down-weighted to keep a shared whole word worth more than a few shared fragments.
_WORD_WEIGHT = 1.0
_TRIGRAM_WEIGHT = 0.5
_WORD_RE = re.compile(r"\w+")
# Empty or punctuation-only texts have no features; they hash this one instead so every
# text gets a unit vector (a zero vector has no cosine similarity and breaks vector indexes).
_EMPTY_FEATURE = "\x00empty"


@functools.lru_cache(maxsize=65536)
def _feature_hash(feature: str) -> int:
    # blake2b, not hash(): Python's str hash is salted per process, and vectors must be
    # identical across runs because they are stored.
    return int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")


def _features(text: str) -> list[tuple[str, float]]:
    features: list[tuple[str, float]] = []
    for word in _WORD_RE.findall(text.lower()):
        features.append(("w:" + word, _WORD_WEIGHT))
        padded = f"<{word}>"
        features.extend(("c:" + padded[i : i + 3], _TRIGRAM_WEIGHT) for i in range(len(padded) - 2))
    return features or [(_EMPTY_FEATURE, 1.0)]


class HashingEmbedder(Embedder):
    def __init__(self, dimension: int = DEFAULT_DIMENSION) -> None:
        if dimension < 2:
            raise ConfigError(f"hashing embedder dimension must be >= 2, got {dimension}")
        self.dimension = dimension
        self.model_id = f"hashing-{dimension}"

    def embed_batch_sync(self, texts: list[str]) -> list[list[float]]:
        return [self._embed_one(text) for text in check_texts(texts)]

    def _embed_one(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        for feature, weight in _features(text):
            h = _feature_hash(feature)
            # Signed hashing: collisions cancel out on average instead of piling up.
            sign = 1.0 if h >> 63 else -1.0
            vector[h % self.dimension] += sign * weight
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0.0:
            # Every feature collided and cancelled out: fall back to the empty-text vector.
            return self._embed_one("")
        return [x / norm for x in vector]
