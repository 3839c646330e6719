"""The one writer of entities (issue 24): one statement creates `:Entity` nodes, and memory's
match-or-create of a name is decided inside the write, on the normalised name."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from polyg.core.graph.entity_writer import EntityWriter
from polyg.core.graph.nodes import NodeChange, NodeService
from polyg.runtime.app import Services
from polyg.store.schema import SCHEMA_VERSION
from tests.store.test_projects import make_version_1

PACKAGE = Path(__file__).resolve().parents[3] / "polyg"
# A Cypher clause that makes a node carrying the Entity label, however the label is spelled in
# the source: literally, through the ENTITY constant, or a label list built at run time.
CREATES_ENTITY = re.compile(r"(CREATE|MERGE)\s*\(\s*\w*\s*:\s*(\{?\{?ENTITY\}?\}?|Entity)\b")


def modules_creating_entities() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if CREATES_ENTITY.search(path.read_text(encoding="utf-8")):
            found.append(str(path.relative_to(PACKAGE.parent)))
    return found


def test_one_module_holds_the_statement_that_creates_entities() -> None:
    assert modules_creating_entities() == ["polyg/store/queries/nodes.py"]
    text = (PACKAGE / "store" / "queries" / "nodes.py").read_text(encoding="utf-8")
    assert len(CREATES_ENTITY.findall(text)) == 1


def test_the_pattern_finds_every_way_a_label_is_spelled() -> None:
    for clause in ("CREATE (n:Entity {id: 1})", "CREATE (e:{ENTITY} {{id: 1}})", "MERGE (:Entity {name: 'x'})"):
        assert CREATES_ENTITY.search(clause), clause
    assert not CREATES_ENTITY.search("MATCH (e:Entity {id: $id})")


def writer(services: Services) -> EntityWriter:
    return services.entities.writer


async def entity_names(services: Services, project: str) -> list[str]:
    rows = await services.store.ro_query(project, "MATCH (e:Entity) RETURN e.name ORDER BY e.name")
    return [row[0] for row in rows]


@pytest.mark.anyio
async def test_a_name_matches_an_entity_of_that_name_in_any_case(services: Services, project: str) -> None:
    made = await writer(services).match_or_create(project, ["Ada Lovelace"], {"Ada Lovelace": "person"})
    assert made["Ada Lovelace"].name == "Ada Lovelace"
    assert made["Ada Lovelace"].type == "person"
    assert made["Ada Lovelace"].labels == ("Entity", "Person")
    assert await writer(services).match_or_create(project, ["ada lovelace", " ADA LOVELACE "]) == {}
    # Two spellings of one new name in one call: one entity, the first spelling.
    made = await writer(services).match_or_create(project, ["Grace Hopper", "grace hopper"])
    assert list(made) == ["Grace Hopper"]
    assert await entity_names(services, project) == ["Ada Lovelace", "Grace Hopper"]


@pytest.mark.anyio
async def test_a_name_differing_in_surrounding_whitespace_is_another_name(services: Services, project: str) -> None:
    # Stored before names were normalised: FalkorDB's index also finds it for "beta".
    await services.named.create_entities(project, [{"name": "alpha", "entityType": "t"}])
    await services.store.query(project, "CREATE (:Entity {id: 'legacy', name: 'beta\n', name_key: 'beta\n'})")
    made = await writer(services).match_or_create(project, ["beta"])
    assert list(made) == ["beta"]


@pytest.mark.anyio
async def test_racing_creates_of_one_name_make_one_entity(services: Services, project: str) -> None:
    spellings = ["Linus Pauling", "linus pauling", "LINUS PAULING", "Linus Pauling"] * 2
    results = await asyncio.gather(*(writer(services).match_or_create(project, [name]) for name in spellings))
    assert sum(len(made) for made in results) == 1
    assert len(await entity_names(services, project)) == 1
    # Through memory's lookup-then-create: whichever lost the race reaches the winner's entity.
    spellings = [
        name.replace("Linus Pauling", "Rosalind Franklin")
        .replace("linus pauling", "rosalind franklin")
        .replace("LINUS PAULING", "ROSALIND FRANKLIN")
        for name in spellings
    ]
    graph = services.memory.entities
    results = await asyncio.gather(*(graph.ensure(project, [name]) for name in spellings))
    assert len({ids[name] for (ids, _), name in zip(results, spellings, strict=True)}) == 1
    assert sum(len(created) for _, created in results) == 1
    assert len(await entity_names(services, project)) == 2


@pytest.mark.anyio
async def test_every_toolset_writes_the_normalised_name(services: Services, project: str) -> None:
    nodes = NodeService(services.ctx, services.edges, writer=writer(services))
    await services.entities.create(project, name="From KG", type_="t")
    await services.named.create_entities(project, [{"name": "From Compat", "entityType": "t"}])
    [outcome] = await nodes.create(project, [_draft("From Knowledge")])
    assert outcome.node is not None
    rows = await services.store.ro_query(project, "MATCH (e:Entity) RETURN e.name, e.name_key ORDER BY e.name")
    assert rows == [["From Compat", "from compat"], ["From KG", "from kg"], ["From Knowledge", "from knowledge"]]
    # A rename moves the key: the new name matches, the old one no longer does.
    await nodes.update(project, [NodeChange(outcome.node.id, name="Renamed")])
    assert await writer(services).match_or_create(project, ["RENAMED"]) == {}
    assert list(await writer(services).match_or_create(project, ["from knowledge"])) == ["from knowledge"]


def _draft(name: str) -> object:
    from polyg.core.graph.nodes import NodeDraft

    return NodeDraft(name=name, type="t")


@pytest.mark.anyio
async def test_entities_written_before_name_keys_get_theirs(services: Services) -> None:
    await make_version_1(services, "before_keys")
    await services.ctx.schema.ensure("before_keys")
    assert (await services.projects.stats("before_keys")).schema_version == SCHEMA_VERSION >= 4
    rows = await services.store.ro_query("before_keys", "MATCH (e:Entity) RETURN e.name, e.name_key ORDER BY e.name")
    assert rows == [["Ada", "ada"], ["notes", "notes"]]
    assert await writer(services).match_or_create("before_keys", ["ADA"]) == {}


def test_toolsets_create_relationships_through_one_statement() -> None:
    """kg (create_relationship), memory-compat (create_relations, import, memory's
    link_entities) and knowledge (manage_edges, and the relationships a new node brings) make
    relationships with `polyg.store.queries.edges.new_relationship`: their query modules spell
    no relationship of their own."""
    queries = PACKAGE / "store" / "queries"
    for module in ("nodes.py", "node_reads.py", "observations.py", "edge_reads.py"):
        text = (queries / module).read_text(encoding="utf-8")
        assert not re.search(r"CREATE \(\w+\)-\[\w*:\{", text), module  # a relationship of a run-time type
    edges = (queries / "edges.py").read_text(encoding="utf-8")
    assert len(re.findall(r"CREATE \(\{start\}\)-\[", edges)) == 1
    assert len(re.findall(r"CREATE \(", edges)) == 1
