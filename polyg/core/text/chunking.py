"""Cutting a document's text into chunks by tokens of the embedding model's tokenizer.

A chunk is at most `size` tokens (never more than the model reads: 256 with its two special
tokens, so at most 254 of text), and ends where the text has its strongest break within
reach: before a heading, else at a paragraph's end, else at a sentence's end, else between
words. Consecutive chunks share `overlap` tokens, except across a heading (a new section
starts clean). The MiniLM tokenizer ships with polyg, so chunks are cut the same way whatever
embedding provider is configured.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from polyg.errors import InvalidParams

MODEL_WINDOW = 256
MAX_CHUNK_TOKENS = MODEL_WINDOW - 2  # [CLS] and [SEP]
DEFAULT_SIZE = 200
DEFAULT_OVERLAP = 32

HEADING_LINE = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
BLANK_LINE = re.compile(r"\n[ \t]*\n")
# A heading closer than this to a chunk's start does not end it (the heading's own line).
MIN_SECTION_TOKENS = 8
SENTENCE_END = frozenset({".", "!", "?", ":", ";"})

# Break strengths: where a chunk would rather end.
HEADING, PARAGRAPH, SENTENCE, WORD, NONE = 4, 3, 2, 1, 0


@dataclass(frozen=True)
class ChunkSpec:
    size: int = DEFAULT_SIZE
    overlap: int = DEFAULT_OVERLAP

    def __post_init__(self) -> None:
        if not 16 <= self.size <= MAX_CHUNK_TOKENS:
            raise InvalidParams(f"chunk size must be 16-{MAX_CHUNK_TOKENS} tokens (the model reads {MODEL_WINDOW}).")
        if not 0 <= self.overlap <= self.size // 2:
            raise InvalidParams("chunk overlap must be between 0 and half the chunk size.")


DEFAULT_SPEC = ChunkSpec()


@dataclass(frozen=True)
class Chunk:
    text: str
    heading: str | None
    tokens: int


@functools.cache
def tokenizer() -> Any:
    """The embedding model's tokenizer (checksum verified), without truncation or padding: the
    MiniLM embedder's own copy (one per process)."""
    from polyg.embed.minilm import shared_tokenizer

    return shared_tokenizer()


def count_tokens(text: str) -> int:
    return len(tokenizer().encode(text, add_special_tokens=False).ids)


def chunk_text(text: str, spec: ChunkSpec = DEFAULT_SPEC) -> list[Chunk]:
    encoding = tokenizer().encode(text, add_special_tokens=False)
    offsets: list[tuple[int, int]] = encoding.offsets
    tokens: list[str] = encoding.tokens
    n = len(offsets)
    if n == 0:
        return []
    headings = [(m.start(), m.group(1)) for m in HEADING_LINE.finditer(text)]
    strength = _breaks(text, offsets, tokens, {start for start, _ in headings})
    chunks: list[Chunk] = []
    start = 0
    while start < n:
        end = _cut(strength, start, spec.size, n)
        begin, finish = offsets[start][0], offsets[end - 1][1]
        chunks.append(Chunk(text[begin:finish].strip(), _heading_at(headings, begin), end - start))
        if end >= n:
            break
        start = end if strength[end] == HEADING else _overlap_start(strength, start, end, spec.overlap)
    return [chunk for chunk in chunks if chunk.text]


def _breaks(text: str, offsets: list[tuple[int, int]], tokens: list[str], heading_starts: set[int]) -> list[int]:
    """For each token index i: how strong a break it is to end a chunk just before token i."""
    strength = [NONE] * (len(offsets) + 1)
    strength[len(offsets)] = HEADING
    for i in range(1, len(offsets)):
        gap = text[offsets[i - 1][1] : offsets[i][0]]
        if tokens[i].startswith("##") or (not gap and tokens[i - 1].isalnum() and tokens[i].isalnum()):
            continue  # inside a word
        line_start = text.rfind("\n", 0, offsets[i][0]) + 1
        if line_start in heading_starts and line_start >= offsets[i - 1][1]:
            strength[i] = HEADING
        elif BLANK_LINE.search(gap):
            strength[i] = PARAGRAPH
        elif tokens[i - 1] in SENTENCE_END and gap:
            strength[i] = SENTENCE
        else:
            strength[i] = WORD
    return strength


def _cut(strength: list[int], start: int, size: int, n: int) -> int:
    """Where the chunk starting at `start` ends: before the first heading in reach (sections
    are not merged, unless the one before is a bare heading), else at the end, else at the
    strongest break in its second half (the latest of equal strength), so a chunk is never
    cut short by more than half."""
    limit = min(start + size, n)
    for i in range(start + MIN_SECTION_TOKENS, limit):
        if strength[i] == HEADING:
            return i
    if limit == n:
        return n
    best, best_strength = limit, NONE
    for i in range(limit, start + size // 2, -1):
        if strength[i] > best_strength:
            best, best_strength = i, strength[i]
    return best


def _overlap_start(strength: list[int], start: int, end: int, overlap: int) -> int:
    """The next chunk starts `overlap` tokens before `end`, moved forward to a sentence's
    start within them, else to a word's start."""
    if overlap == 0:
        return end
    first = max(end - overlap, start + 1)
    for wanted in (SENTENCE, WORD):
        for i in range(first, end):
            if strength[i] >= wanted:
                return i
    return end


def _heading_at(headings: list[tuple[int, str]], position: int) -> str | None:
    current = None
    for start, title in headings:
        if start > position:
            break
        current = title
    return current
