"""Import and export of a project: the official memory server's JSONL, and polyg's own JSON.

`memory-jsonl`: lines `{"type": "entity", "name", "entityType", "observations"}` and
`{"type": "relation", "from", "to", "relationType"}`. Importing is idempotent: entities are
matched by name, observations and relations already present are skipped.

`json`: everything polyg stores, every toolset's nodes and relationships with all their
properties, in the form of the memory toolset's `export_graph` (one export for both: the CLI
document's `items` are that tool's items); importing it goes through `polyg.core.transfer.graph_import`
and restores them exactly. Embeddings are derived data: they are exported only when asked,
and recomputed on import when left out. A version-1 document (entities and relationships
only, as polyg wrote before) still imports.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from polyg.core import limits
from polyg.core.memory.named import NamedGraph, stored_type
from polyg.core.memory.views import Views
from polyg.core.transfer.graph_import import is_graph_export
from polyg.errors import InvalidParams, PolygError
from polyg.names import TYPE_NAME
from polyg.store.names import is_reserved_rel_type, short
from polyg.store.queries import transfer as q

# How often the wait for an import's vectors reports progress.
PROGRESS_S = 0.5

Progress = Callable[[int], None]  # called with the number of items just processed
PAGE = 1000
# Items per export_graph page the JSON export reads: each page sorts the graph to skip to its
# offset, so fewer, larger pages (the store reads them in well under a second).
EXPORT_PAGE = 5000
JSON_FORMAT = "polyg-export"
# Version 2 holds `items`, export_graph's nodes and edges (everything the project stores);
# version 1 held only entities and their relationships, and is still read.
VERSION = 2
# Relationship properties polyg writes itself: an imported `properties` map cannot set them.
OWN_REL_PROPERTIES = frozenset({"id", "label", "description", "created_at", "rev"})
# How much of a line a skipped-line reason quotes.
QUOTE = 60


# --- reading files ---------------------------------------------------------------------------


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 file, a byte-order mark dropped; a line that is not
    UTF-8 is an error naming it (raised before the caller has used what follows)."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidParams(f"{path.name}, line {number}: not UTF-8 text ({exc.reason}).") from None


def check_text_file(path: Path) -> int:
    """Decode the whole file before anything is written; returns its count of non-blank lines."""
    return sum(1 for _, line in read_lines(path) if line.strip())


def detect_format(path: Path) -> str:
    """ "graph-json" for what the memory toolset's `export_graph` returns (a page, a list of
    pages, or a page per line), "json" for a polyg export, "memory-jsonl" otherwise. A JSONL
    file's first line is a whole JSON object of its own (an entity or a relation); an export's
    first line is not (it opens a document), unless the export is all on one line, which then
    is a document with "format"."""
    for _, line in read_lines(path):
        if not line.strip():
            continue
        if line.lstrip().startswith("["):
            return "graph-json"  # no other format is a list
        if not line.lstrip().startswith("{"):
            return "memory-jsonl"
        try:
            first = json.loads(line)
        except json.JSONDecodeError:
            return "graph-json" if is_graph_export(_whole(path)) else "json"
        if is_graph_export(first):
            return "graph-json"
        return "json" if isinstance(first, dict) and "format" in first and "type" not in first else "memory-jsonl"
    return "memory-jsonl"


def _whole(path: Path) -> Any:
    """The file as one JSON value, or None if it is not one."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError:
        return None


def read_text(path: Path) -> str:
    return "".join(line for _, line in read_lines(path))


def export_items(document: dict[str, Any]) -> list[Any] | None:
    """The nodes and edges of a version-2 export, or None for a version-1 one."""
    if document.get("format") != JSON_FORMAT:
        raise InvalidParams(f'Not a polyg export (expected "format": "{JSON_FORMAT}").')
    if "items" not in document:
        return None
    items = document["items"]
    if not isinstance(items, list):
        raise InvalidParams("items must be a list.")
    return items


def load_json(path: Path) -> dict[str, Any]:
    text = read_text(path)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidParams(f"{path.name}, line {exc.lineno}: not JSON ({exc.msg}).") from None
    if not isinstance(document, dict):
        raise InvalidParams(f'Not a polyg export (expected an object with "format": "{JSON_FORMAT}").')
    return document


@dataclass
class ImportReport:
    entities_created: int = 0
    observations_added: int = 0
    relations_created: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (line number, reason)

    def as_dict(self) -> dict[str, Any]:
        return {
            "entities_created": self.entities_created,
            "observations_added": self.observations_added,
            "relations_created": self.relations_created,
            "skipped": [{"line": n, "reason": r} for n, r in self.skipped],
        }


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _entity_line(item: dict[str, Any]) -> dict[str, Any]:
    """The entity of a line, checked against the limits the tools apply (InvalidParams if not)."""
    name, entity_type, observations = item.get("name"), item.get("entityType"), item.get("observations", [])
    if not isinstance(name, str) or not isinstance(entity_type, str):
        raise InvalidParams("an entity needs a string name and entityType")
    if not _is_str_list(observations):
        raise InvalidParams("observations must be a list of strings")
    return {
        "name": limits.name(name),
        "entityType": limits.type_(entity_type, "entityType"),
        "observations": limits.batch(observations, "observations"),
    }


def _relation_line(item: dict[str, Any]) -> dict[str, str]:
    rel = {}
    for key in ("from", "to", "relationType"):
        value = item.get(key)
        if not isinstance(value, str):
            raise InvalidParams("a relation needs string from, to and relationType")
        rel[key] = limits.relation_text(value, key) if key == "relationType" else limits.name(value, key)
    return rel


def parse_memory_jsonl(
    lines: Iterable[tuple[int, str]], report: ImportReport
) -> tuple[list[dict[str, Any]], list[tuple[int, dict[str, str]]]]:
    """Entities and (line number, relation)s of a memory JSONL file (numbered lines, as
    `read_lines` gives them); bad lines go to the report."""
    entities: list[dict[str, Any]] = []
    relations: list[tuple[int, dict[str, str]]] = []
    for number, line in lines:
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            report.skipped.append((number, f"not JSON: {exc.msg}"))
            continue
        kind = item.get("type") if isinstance(item, dict) else None
        try:
            if kind == "entity":
                entities.append(_entity_line(item))
            elif kind == "relation":
                relations.append((number, _relation_line(item)))
            else:
                report.skipped.append((number, 'not an entity or relation line (no "type": "entity"/"relation")'))
        except InvalidParams as exc:  # PayloadTooLarge too
            report.skipped.append((number, exc.message))
    return entities, relations


def _valid_type(name: Any) -> bool:
    return isinstance(name, str) and bool(TYPE_NAME.fullmatch(name)) and not is_reserved_rel_type(name)


def _relation_batch(batch_size: int) -> int:
    """Relations go in bigger batches than entities (no embeddings), within the batch limit."""
    return min(batch_size * 4, limits.MAX_BATCH)


def _batches(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class Transfer:
    def __init__(self, named: NamedGraph) -> None:
        self.named = named
        self.ctx = named.ctx

    async def import_memory_jsonl(
        self,
        project: str,
        lines: Iterable[tuple[int, str]],
        *,
        batch_size: int = 256,
        progress: Progress | None = None,
    ) -> ImportReport:
        report = ImportReport()
        entities, relations = parse_memory_jsonl(lines, report)
        merged: dict[str, dict[str, Any]] = {}
        for entity in entities:  # a name may appear on several lines: merge them
            into = merged.setdefault(entity["name"], {**entity, "observations": []})
            into["observations"] += [o for o in entity["observations"] if o not in into["observations"]]
        if progress:  # bad lines, and lines merged into an earlier one, are done with
            progress(len(report.skipped) + len(entities) - len(merged))
        for batch in _batches(list(merged.values()), batch_size):
            new, rows = await self.named.prepare_entities(project, batch)
            written = await self.named.write_entities(project, rows) if rows else set()
            created = [e for e, row in zip(new, rows, strict=True) if row["id"] in written]
            report.entities_created += len(created)
            # A new entity's observations are added too (the summary used to count only those
            # added to entities the project held).
            report.observations_added += sum(len(e["observations"]) for e in created)
            made = {e["name"] for e in created}
            extra = [
                {"entityName": e["name"], "contents": e["observations"]}
                for e in batch
                if e["name"] not in made and e["observations"]
            ]
            if extra:
                added = await self.named.add_observations(project, extra)
                report.observations_added += sum(len(a.added) for a in added)
            if progress:
                progress(len(batch))
        unknown: list[tuple[int, str]] = []
        for batch in _batches(relations, _relation_batch(batch_size)):
            ids = await self.named.ids_by_name(project, [n for _, r in batch for n in (r["from"], r["to"])])
            known = []
            for number, r in batch:
                missing = [n for n in (r["from"], r["to"]) if n not in ids]
                if missing:
                    names = " and ".join(repr(n) for n in dict.fromkeys(missing))
                    unknown.append((number, f"relation {r['from']!r} -> {r['to']!r}: unknown entity {names}"))
                else:
                    known.append(r)
            if known:
                report.relations_created += len(await self.named.create_relations(project, known))
            if progress:
                progress(len(batch))
        report.skipped = sorted(report.skipped + unknown)
        return report

    async def wait_for_vectors(self, project: str, progress: Callable[[int, int], None] | None = None) -> bool:
        """Wait until the vectorizer has stored the vectors of everything imported, reporting
        (entities done, entities queued) as it goes. False if the embedder is failing: what is
        left is made the next time polyg opens the store."""
        vectors = self.ctx.vectors
        total = vectors.unstored(project)
        while not await vectors.settle(project, PROGRESS_S):
            if vectors.failures:
                return False
            if progress:
                left = vectors.unstored(project)
                total = max(total, left)
                progress(total - left, total)
        if progress:
            progress(total, total)
        return True

    async def export_memory_jsonl(self, project: str, out: TextIO) -> int:
        count = 0
        offset = 0
        while True:
            ids, more = await self.named.page(project, offset, PAGE)
            for entity in await self.named.entities(project, ids):
                line = {"type": "entity", "name": entity.name, "entityType": entity.type}
                out.write(json.dumps({**line, "observations": list(entity.observations)}, ensure_ascii=False) + "\n")
                count += 1
            offset += len(ids)
            if not more:
                break
        async for rel in self._relationships(project):
            line = {"type": "relation", "from": rel["from"], "to": rel["to"], "relationType": rel["text"]}
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
            count += 1
        return count

    async def export_json(self, project: str, out: TextIO, *, embeddings: bool = False) -> int:
        """Write the project as one JSON document: every node and relationship, as the memory
        toolset's `export_graph` gives them (the one export both paths share), streamed a page
        at a time. Vectors only when asked: they are derived, and an import recomputes them."""
        header = {"format": JSON_FORMAT, "version": VERSION, "project": project, "embeddings": embeddings}
        out.write(json.dumps(header)[:-1] + ', "items": [\n')
        views = Views(self.ctx)
        count = 0
        offset: int | None = 0
        while offset is not None:
            page = await views.export(project, "json", offset=offset, limit=EXPORT_PAGE, embeddings=embeddings)
            for item in page.items:
                out.write(("" if count == 0 else ",\n") + json.dumps(item, ensure_ascii=False))
                count += 1
            offset = page.next_offset
        out.write("\n]}\n")
        return count

    async def _relationships(self, project: str) -> Any:
        after = ""
        while True:
            rows = await q.relations_after(self.ctx, project, after, PAGE)
            for rid, aid, aname, bid, bname, rtype, props in rows:
                props = dict(props)
                yield {
                    "id": rid,
                    "source_id": aid,
                    "target_id": bid,
                    "from": aname,
                    "to": bname,
                    "type": rtype,
                    "text": props.pop("label", None) or rtype,
                    "description": props.pop("description", "") or "",
                    "created_at": props.pop("created_at", None),
                    "properties": {k: v for k, v in props.items() if k != "id"},
                }
            if len(rows) < PAGE:
                return
            after = rows[-1][0]

    async def import_json(
        self,
        project: str,
        document: dict[str, Any],
        *,
        batch_size: int = 256,
        progress: Progress | None = None,
    ) -> ImportReport:
        """Restore an export. Every item is checked against the limits the tools apply; one
        that fails is reported and left out, the rest are written."""
        if document.get("format") != JSON_FORMAT:
            raise InvalidParams(f'Not a polyg export (expected "format": "{JSON_FORMAT}").')
        report = ImportReport()
        entities = _checked(document.get("entities", []), "entities", _export_entity, report)
        relationships = _checked(document.get("relationships", []), "relationships", _export_relationship, report)
        if progress:
            progress(len(report.skipped))
        for batch in _batches(entities, batch_size):
            await self._restore_entities(project, batch, report)
            if progress:
                progress(len(batch))
        for batch in _batches(relationships, _relation_batch(batch_size)):
            report.relations_created += len(await self.named.write_relations(project, batch, same="id"))
            if progress:
                progress(len(batch))
        return report

    async def _restore_entities(self, project: str, batch: list[dict[str, Any]], report: ImportReport) -> None:
        have = await self.named.existing_ids(project, [e["id"] for e in batch])
        fresh = [e for e in batch if e["id"] not in have]
        if not fresh:
            return
        written = await self.named.write_entities(project, fresh, unique_names=False)
        report.entities_created += len(written)
        report.observations_added += sum(len(e["obs"]) for e in fresh if e["id"] in written)


def _checked(
    items: Any, field: str, check: Callable[[dict[str, Any]], dict[str, Any]], report: ImportReport
) -> list[dict[str, Any]]:
    """The items that pass `check`, each id once; the others go to the report."""
    if not isinstance(items, list):
        raise InvalidParams(f"{field} must be a list.")
    kept: dict[str, dict[str, Any]] = {}
    for i, item in enumerate(items):
        try:
            if not isinstance(item, dict):
                raise InvalidParams("not an object")
            row = check(item)
        except (PolygError, KeyError, TypeError) as exc:
            reason = exc.message if isinstance(exc, PolygError) else f"missing or invalid {short(str(exc), QUOTE)}"
            report.skipped.append((0, f"{field}[{i}]: {reason}"))
            continue
        kept.setdefault(row["id"], row)
    return list(kept.values())


def _id(value: Any, field: str) -> str:
    return limits.name(value, field)


def _optional_text(value: Any, field: str, max_len: int = limits.MAX_TEXT) -> str | None:
    return None if value is None else limits.text(value, field, max_len=max_len, allow_empty=True)


def _export_entity(item: dict[str, Any]) -> dict[str, Any]:
    observations = item.get("observations") or []
    if not isinstance(observations, list):
        raise InvalidParams("observations must be a list")
    limits.count(observations, "observations")
    return {
        "id": _id(item["id"], "id"),
        "name": limits.name(item["name"]),
        "type": limits.type_(item["type"]),
        "summary": _optional_text(item.get("description"), "description") or "",
        "parent_id": None if item.get("parent_id") is None else _id(item["parent_id"], "parent_id"),
        "created_at": _optional_text(item.get("created_at"), "created_at", limits.MAX_TYPE),
        "updated_at": _optional_text(item.get("updated_at"), "updated_at", limits.MAX_TYPE),
        "obs": [
            {
                "id": _id(o["id"], f"observations[{i}].id"),
                "text": limits.text(o["text"], f"observations[{i}].text", max_len=limits.MAX_TEXT),
                "created_at": _optional_text(o.get("created_at"), "created_at", limits.MAX_TYPE),
            }
            for i, o in enumerate(observations)
        ],
    }


def _export_relationship(item: dict[str, Any]) -> dict[str, Any]:
    rel_type, text = item["type"], item.get("text") or item["type"]
    limits.relation_text(text, "text")
    return {
        "id": _id(item["id"], "id"),
        "a": _id(item["source_id"], "source_id"),
        "b": _id(item["target_id"], "target_id"),
        # The type is interpolated into Cypher: only a valid name is used as it is.
        "type": rel_type if _valid_type(rel_type) else stored_type(text),
        "text": text,
        "description": _optional_text(item.get("description"), "description") or "",
        "created_at": _optional_text(item.get("created_at"), "created_at", limits.MAX_TYPE),
        "props": _properties(item.get("properties") or {}),
    }


def _properties(props: Any) -> dict[str, Any]:
    """A relationship's own properties, as the store can hold them; polyg's keys are not
    overwritten (they are dropped here, as the export never writes them in `properties`)."""
    if not isinstance(props, dict):
        raise InvalidParams("properties must be an object")
    limits.count(list(props), "properties")
    kept: dict[str, Any] = {}
    for key, value in props.items():
        if key in OWN_REL_PROPERTIES:
            continue
        if not (isinstance(key, str) and TYPE_NAME.fullmatch(key)):
            raise InvalidParams(f"property name {short(key, QUOTE)} is not a valid name")
        values = value if isinstance(value, list) else [value]
        limits.count(values, f"properties.{key}")
        for v in values:
            if isinstance(v, str):
                limits.text(v, f"properties.{key}", max_len=limits.MAX_TEXT, allow_empty=True)
            elif isinstance(v, bool):
                pass
            elif not isinstance(v, (int, float)) or not (math.isfinite(v) and abs(v) < 2**63):
                raise InvalidParams(f"property {key} must be a string, number, boolean or a list of them")
        kept[key] = value
    return kept
