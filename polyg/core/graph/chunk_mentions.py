"""Which entities a document chunk mentions: `(:Chunk)-[:MENTIONS]->(:Entity)` when the chunk's
text holds the entity's name exactly as written, as whole words.

Both orders of writing keep the links right:
- a chunk ingested after the entity: ingestion matches every new chunk against the project's
  entity names (`NameMatcher`, in `polyg.core.ingest`); `polyg import` does the same for the
  chunks it restores (`follow_chunks`);
- an entity written after the chunk, or renamed: the vectorizer's round that follows every
  change to an entity's text (`polyg.core.graph.vectorizer`, whichever tool or process made it) calls
  `follow_entities`. The chunks' full-text index finds those holding the name's words as a
  phrase, at most `MAX_LINKED_CHUNKS` per entity (best full-text score first), each confirmed
  here by `NameMatcher`; links from chunks that no longer hold the name (a rename) are dropped.
  Searches wait for that round (`Vectorizer.settle`), so graph_retrieve reports an entity's
  mentions as soon as its search can find the entity's chunks. `polyg import` calls it for
  the entities it restores with their vectors (the vectorizer has nothing to do for them). A
  deleted entity's links go with it (DETACH DELETE).

Why on the write side rather than resolving names when graph_retrieve expands its chunks: at
query time every word sequence of every returned chunk would have to be looked up among the
entity names (hundreds of index probes per chunk, on every query); here an entity costs one
full-text query when its text changes, off the tool's path, and nothing at all in a project
that holds no chunks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from polyg.store.queries import Runner
from polyg.store.queries import articles as q
from polyg.store.queries import node_reads as node_reads_q

WORD = re.compile(r"\w+")
# A name shorter than this is too likely to be a word that merely looks like it.
MIN_NAME_CHARS = 3
# Chunks linked to one entity when it is created or renamed: a name as common as a word of the
# corpus ("Python" in Python's documentation) is linked to its best-scoring chunks only.
MAX_LINKED_CHUNKS = 500
# Entities whose candidate chunks one query reads (their texts travel back to be confirmed).
ENTITIES_PER_QUERY = 16


class NameMatcher:
    """Finds the known entity names a text holds exactly as written, as whole words: "Sam" is
    in "Sam's dog" but not in "Samuel", "GPT-4" is in "GPT-4's successor" but neither in
    "GPT-4o" nor in "GPT 4"."""

    def __init__(self, names: Sequence[tuple[str, str]]) -> None:
        # first word of the name -> (the name, where that word starts in it, entity id)
        self._by_first: dict[str, list[tuple[str, int, str]]] = {}
        for entity_id, name in names:
            first = WORD.search(name or "")
            if first and len(name) >= MIN_NAME_CHARS:
                self._by_first.setdefault(first.group(), []).append((name, first.start(), entity_id))

    def __bool__(self) -> bool:
        return bool(self._by_first)

    def find(self, text: str) -> set[str]:
        found: set[str] = set()
        for word in WORD.finditer(text):
            for name, offset, entity_id in self._by_first.get(word.group(), ()):
                # A name that starts with a word starts at a word boundary (the word found is
                # a whole word of the text); it must also end at one.
                start = word.start() - offset
                end = start + len(name)
                if (
                    start >= 0
                    and text.startswith(name, start)
                    and not (end < len(text) and WORD.match(text[end]) and WORD.match(name[-1]))
                ):
                    found.add(entity_id)
        return found


def phrase(name: str) -> str | None:
    """The full-text query for a name's words side by side; None for a name that cannot be
    mentioned (too short, no words)."""
    words = WORD.findall(name)
    if len(name) < MIN_NAME_CHARS or not words:
        return None
    return '"' + " ".join(word.lower() for word in words) + '"'


async def follow_entities(runner: Runner, project: str, entities: Sequence[tuple[str, str]]) -> int:
    """Bring the `MENTIONS` links of these (id, name) entities in line with their names, just
    written; how many links were made."""
    if not entities or not await q.chunk_count(runner, project):
        return 0
    wanted = [
        {"id": entity_id, "name": name, "phrase": query}
        for entity_id, name in entities
        if (query := phrase(name)) is not None
    ]
    links: list[list[str]] = []
    for start in range(0, len(wanted), ENTITIES_PER_QUERY):
        part = wanted[start : start + ENTITIES_PER_QUERY]
        names = {item["id"]: NameMatcher([(item["id"], item["name"])]) for item in part}
        for entity_id, chunk_id, text in await q.chunks_naming(runner, project, part, MAX_LINKED_CHUNKS):
            if names[entity_id].find(text):
                links.append([chunk_id, entity_id])
    await q.relink_mentions(runner, project, [entity_id for entity_id, _ in entities], links)
    return len(links)


async def follow_chunks(runner: Runner, project: str, chunks: Sequence[tuple[str, str]]) -> int:
    """`MENTIONS` links from these (id, text) chunks, just written, to every entity of the
    project whose name they hold, as ingestion links its chunks; how many links were made
    (links the chunks had are kept)."""
    if not chunks:
        return 0
    matcher = NameMatcher([(str(i), str(n)) for i, n in await node_reads_q.entity_names(runner, project)])
    if not matcher:
        return 0
    links = [[chunk_id, entity_id] for chunk_id, text in chunks for entity_id in sorted(matcher.find(text))]
    await q.relink_mentions(runner, project, [], links)
    return len(links)
