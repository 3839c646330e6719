"""How informative a word is in English at large, independent of any project's texts.

A project's own document frequencies (the idf of `polyg.core.search`) are noisy when it holds
few texts: among 14 musicians "player" (2 texts) outweighs "saxophonist" (3 texts). The
embedding model's WordPiece vocabulary, shipped with polyg, gives a background prior: past the
special and single-character entries, its whole words are ordered by how often they occurred in
the model's training text, so a word's place there stands for its frequency in English; a word
the vocabulary splits into pieces is rarer than all of them.
"""

from __future__ import annotations

import functools
import math

from polyg.core.chunking import tokenizer

# The first whole-word entry of the uncased BERT vocabulary ("the"); what precedes it are
# padding, unused and special tokens and single characters.
FIRST_WORD_ID = 1996


@functools.cache
def _vocab_size() -> int:
    return int(tokenizer().get_vocab_size())


def load() -> None:
    """Read the vocabulary (its checksum verified) now: the server calls this in a worker
    thread while it starts, so that no search pays for it or blocks the event loop on it."""
    _vocab_size()


def loaded() -> bool:
    return _vocab_size.cache_info().currsize > 0


def forget() -> None:
    """Forget what was read (the next use reads it again)."""
    _vocab_size.cache_clear()
    informativeness.cache_clear()


@functools.lru_cache(maxsize=4096)
def informativeness(word: str) -> float:
    """0 for the commonest words, rising with the log of the word's frequency rank, 1 for words
    outside the vocabulary (split into pieces: rare words, names, typos)."""
    ids = tokenizer().encode(word, add_special_tokens=False).ids
    words = _vocab_size() - FIRST_WORD_ID
    if len(ids) != 1:
        return 1.0
    if ids[0] < FIRST_WORD_ID:
        return 0.0
    return math.log1p(ids[0] - FIRST_WORD_ID) / math.log1p(words)
