"""How informative a word is in English at large, independent of any project's texts.

A project's own document frequencies (the idf of `polyg.core.search`) are noisy when it holds
few texts: among 14 musicians "player" (2 texts) outweighs "saxophonist" (3 texts). The
embedding model's WordPiece vocabulary, shipped with polyg, gives a background prior: past the
special and single-character entries, its whole words are ordered by how often they occurred in
the model's training text, so a word's place there stands for its frequency in English; a word
the vocabulary splits into pieces is rarer than all of them.

The same vocabulary tells an ordinary English word from a name (`common_word`): it is uncased,
so a word's rank alone does not ("caroline" is more frequent than "pottery"), but ordinary words
inflect and names do not: the vocabulary holds "arts", "changed", "greatly", "bigger" beside
"art", "change", "great", "big", and no "carolines" beside "caroline".
"""

from __future__ import annotations

import functools
import math
import re

from polyg.core.text.chunking import tokenizer

# The first whole-word entry of the uncased BERT vocabulary ("the"); what precedes it are
# padding, unused and special tokens and single characters.
FIRST_WORD_ID = 1996


@functools.cache
def _vocab_size() -> int:
    return int(tokenizer().get_vocab_size())


def load() -> None:
    """Read the vocabulary (its checksum verified) now: the server calls this in a worker
    thread while it starts, so that no search or remember pays for it or blocks the event loop
    on it."""
    _vocab_size()
    _whole_words()


def loaded() -> bool:
    return _vocab_size.cache_info().currsize > 0


def forget() -> None:
    """Forget what was read (the next use reads it again)."""
    _vocab_size.cache_clear()
    _whole_words.cache_clear()
    informativeness.cache_clear()
    common_word.cache_clear()


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


# Suffixes of abstract nouns ("adoption", "kindness", "community", "friendship").
_NOUN_SUFFIX = re.compile(r"(?:tion|sion|ness|ity|ment|ship|hood|ism|ology)$")
# A one-syllable word ending consonant-vowel-consonant doubles its last letter before a suffix
# ("big" -> "bigger", "blog" -> "blogging"): "tim" + "ed" is "time"'s "timed", not Tim's.
_DOUBLES = re.compile(r"^[^aeiou]*[aeiou][^aeiouwxy]$")


@functools.cache
def _whole_words() -> frozenset[str]:
    vocab: dict[str, int] = tokenizer().get_vocab()
    return frozenset(w for w, i in vocab.items() if i >= FIRST_WORD_ID and w.isalpha())


@functools.lru_cache(maxsize=4096)
def common_word(word: str) -> bool:
    """Whether `word` reads as an ordinary English word rather than a name: the vocabulary
    holds it with one of its regular inflections or derivations ("arts", "changed", "greatly",
    "bigger", "toughness", "musical", "confident"), or it is a regular form of a word the
    vocabulary holds ("running", "pottery", and, unknown to the vocabulary, "volunteering",
    "mentors"), or it has an abstract noun's suffix ("adoption", "kindness"). Names
    ("Caroline", "Melanie", "Postgres", "Kubernetes") are none of these; a name that is also an
    ordinary word or whose plural is a surname ("Mark", "John": "johns") is common here."""
    lowered = word.lower()
    if not lowered.isalpha():
        return False
    words = _whole_words()
    if len(lowered) > 6 and _NOUN_SUFFIX.search(lowered):
        return True
    if any(stem in words or _any_in(_forms(stem) - {lowered}, words) for stem in _stems(lowered)):
        return True
    if lowered.endswith("ry") and len(lowered) > 6 and lowered[:-1] in words:
        return True  # a craft or an act named after its doer: "pottery", "discovery"
    plurals = [stem for stem in _plural_stems(lowered) if stem in words]
    if lowered in words:
        # A plural the vocabulary holds is a name's ("williams", "adams") unless its singular
        # also has forms of its own ("books": "booked").
        return _any_in(_forms(lowered), words) or any(_any_in(_forms(p) - {lowered}, words) for p in plurals)
    return bool(plurals)


def _any_in(candidates: set[str], words: frozenset[str]) -> bool:
    return not words.isdisjoint(candidates)


def _forms(word: str) -> set[str]:
    """A word's regular inflections and a few derivations (not all of them real words)."""
    base = word + word[-1] if _DOUBLES.match(word) else word
    out = {word + "s", word + "ly", word + "al", word + "ness", *(base + s for s in ("ed", "ing", "er", "est"))}
    if word.endswith("e"):
        out |= {word + "d", word + "r", word + "st", word[:-1] + "ing"}
        if len(word) > 4:
            out.add(word[:-1] + "al")
    if word.endswith("y"):
        out |= {word[:-1] + s for s in ("ies", "ied", "ily", "ier", "iest", "iness")}
    if word.endswith(("s", "x", "z", "ch", "sh")):
        out.add(word + "es")
    if word.endswith(("ence", "ance")):
        out.add(word[:-2] + "t")
    return out


def _stems(word: str) -> tuple[str, ...]:
    """What `word` would be a present or past participle of ("running", "hiking", "mixed");
    a stem the vocabulary lacks counts through its other forms ("exciting": "excited")."""
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) >= len(suffix) + 3:
            stem = word[: -len(suffix)]
            doubled = (stem[:-1],) if stem[-1] == stem[-2] else ()
            return (stem, stem + "e", *doubled)
    return ()


def _plural_stems(word: str) -> tuple[str, ...]:
    if word.endswith("ies") and len(word) > 4:
        return (word[:-3] + "y",)
    if word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")):
        return (word[:-2],)
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return (word[:-1],)
    return ()
