"""`polyg import` of what `export_graph(format: json)` returns, as a user runs it: a memory graph
built through the MCP tools, exported page by page through the client, imported by the CLI into
an empty project, exported again: the same graph, and the tools answer the same. Files that are
incomplete or malformed are refused with an `Error:` line and nothing is written.

`polyg import` runs in the test process (tests/cli_runner.py: the CLI's own click command with
the environment, streams and exit status the process had), attached to the module server's
FalkorDB as the process was: a `polyg` process costs about 1 s of CPU to start, 14 of them here."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import Completed, run_cli
from tests.mcp_helpers import KG, kg_session, server_env
from tests.tools.memory.conftest import Memory, seed
from tests.tools.memory.scenarios import deployment_failure, personal_knowledge

pytestmark = pytest.mark.anyio

GRAPH_REPORT = "created {} nodes, {} relationships; {} already there"


@pytest.fixture(scope="module")
async def shared(servers_root: Path) -> AsyncIterator[KG]:
    """One memory server for the module (a memory server start loads the NLP models: seconds of
    CPU), on the data directory the CLI imports into; each test works in projects of its own.
    The CLI attaches to the server's FalkorDB instead of starting its own (that the CLI stops
    a FalkorDB it started is checked after every test of tests/e2e/test_transfer.py)."""
    async with kg_session("stdio", servers_root / "memory-import", "--toolsets", "memory") as server:
        yield server


@pytest.fixture
def root(shared: KG) -> Path:
    return shared.root


def polyg_import(root: Path, path: Path, project: str, *extra: str) -> Completed:
    return run_cli(
        ["import", str(path), "--project", project, "--data-dir", str(root / "data"), *extra], server_env(root)
    )


async def build(mem: Memory) -> None:
    """Entities with properties, a link, events, facts with windows and an invalidation, causal
    links with confidence and evidence, concepts with a similarity link and what they represent."""
    await seed(mem, deployment_failure())
    await seed(mem, personal_knowledge())
    await mem.ok("add_fact", subject="Alice", predicate="works_on", object="Billing", valid_from="2026-01-01")
    await mem.ok("link_entities", source="Alice", target="auth-service", relationship="maintains")
    await mem.ok(
        "add_event",
        description="Alice reviewed the auth-service runbook",
        occurred_at="2026-01-08T10:00:00Z",
        duration="PT45M",
        entities=["Alice"],
    )
    await mem.ok("add_concept", name="Authentication", description="Proving who a user is", represents=["Alice"])
    similar = await mem.ok("add_concept", name="User authentication", description="Proving who a user is before access")
    assert similar["similar"], "the two concepts must be linked as similar"
    await mem.ok("search_semantic", query="auth")  # waits until every vector is stored


async def export_pages(mem: Memory, limit: int, *, embeddings: bool = True) -> list[dict[str, Any]]:
    pages = []
    offset: int | None = 0
    while offset is not None:
        page = await mem.ok("export_graph", format="json", offset=offset, limit=limit, include_embeddings=embeddings)
        pages.append(page)
        offset = page["next_offset"]
    return pages


def graph_of(pages: list[dict[str, Any]]) -> tuple[dict[tuple[str, ...], dict[str, Any]], list[Any]]:
    """Nodes by (labels, id or name), and edges as sorted tuples: the graph, order aside."""
    nodes: dict[tuple[str, ...], dict[str, Any]] = {}
    edges = []
    for item in (item for page in pages for item in page["items"]):
        props = item["properties"]
        if item["kind"] == "node":
            if "PolygMeta" not in item["labels"]:
                nodes[(*sorted(item["labels"]), str(props.get("id") or props.get("name")))] = props
        else:
            edges.append((item["from"]["id"], item["type"], item["to"]["id"], sorted(props.items())))
    return nodes, sorted(edges, key=repr)


def assert_same_graph(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> None:
    nodes, edges = graph_of(before)
    nodes_after, edges_after = graph_of(after)
    assert nodes_after.keys() == nodes.keys()
    for key, props in nodes.items():
        restored = nodes_after[key]
        vectors = ("embedding", "head_embedding")
        assert {k: v for k, v in restored.items() if k not in vectors} == {
            k: v for k, v in props.items() if k not in vectors
        }, key
        for name in vectors:
            assert (name in restored) == (name in props), (key, name)
            if name in props:
                assert restored[name] == pytest.approx(props[name], abs=1e-6)
    assert edges_after == edges


async def reads(mem: Memory) -> dict[str, Any]:
    """What the tools answer about the graph: restored, they must answer the same."""
    return {
        "alice": await mem.ok("get_entity", name="Alice"),
        "alice_2024": await mem.ok("get_facts", subject="Alice", as_of="2024-06-01"),
        "timeline": await mem.ok("query_timeline", **{"from": "2024-01-01", "to": "2026-02-01", "limit": 100}),
        "invalidations": await mem.ok("list_invalidations"),
        "why": await mem.ok("explain_why", event="Auth service crashed"),
        "chain": await mem.ok("get_causal_chain", event="Auth service crashed", direction="both", depth=3),
    }


async def test_export_graph_json_imports_into_an_empty_project_as_the_same_graph(
    shared: KG, root: Path, tmp_path: Path, project: str
) -> None:
    source = Memory(shared, f"{project}_source")
    await build(source)
    pages = await export_pages(source, limit=9)
    assert len(pages) > 5
    whole = await export_pages(source, limit=20000, embeddings=False)
    answers = await reads(source)
    assert answers["why"]["explanations"][0]["confidence"] == pytest.approx(0.95 * 0.88)
    assert answers["invalidations"]["invalidations"], "the graph must hold an invalidation"
    stats_items = [i for p in pages for i in p["items"]]
    assert {"SIMILAR_TO", "REPRESENTS", "CAUSES", "INVOLVES", "T_BEFORE"} <= {i.get("type") for i in stats_items}

    file = tmp_path / "pages.json"
    file.write_text(json.dumps(pages), encoding="utf-8")
    done = polyg_import(root, file, f"{project}_restored")
    assert done.returncode == 0, done.stderr
    nodes = sum(1 for i in stats_items if i["kind"] == "node" and "PolygMeta" not in i["labels"])
    edges = sum(1 for i in stats_items if i["kind"] == "edge")
    assert GRAPH_REPORT.format(nodes, edges, 0) in done.stderr, done.stderr
    again = polyg_import(root, file, f"{project}_restored")  # an interrupted import can be run again
    assert GRAPH_REPORT.format(0, 0, nodes + edges) in again.stderr, again.stderr

    # One page per line, and without vectors (polyg computes them): also the same graph.
    lines = tmp_path / "pages.jsonl"
    lines.write_text("".join(json.dumps(page) + "\n" for page in whole), encoding="utf-8")
    assert polyg_import(root, lines, f"{project}_recomputed").returncode == 0

    # Read back through the module's server, which never saw the imported projects: it reads
    # them from the store the CLI wrote to, as a server started after the imports would.
    restored = Memory(shared, f"{project}_restored")
    assert_same_graph(pages, await export_pages(restored, limit=50))
    assert await reads(restored) == answers
    recomputed = Memory(shared, f"{project}_recomputed")
    found = await recomputed.ok("search_semantic", query="Alice reviewed the auth-service runbook", limit=3)
    assert found["results"][0]["text"] == "Alice reviewed the auth-service runbook"
    assert_same_graph(whole, await export_pages(recomputed, limit=20000, embeddings=False))
    assert await reads(recomputed) == answers


async def test_malformed_or_incomplete_files_are_refused_and_nothing_is_written(
    shared: KG, root: Path, tmp_path: Path, project: str
) -> None:
    source = Memory(shared, f"{project}_source")
    await seed(source, deployment_failure())
    pages = await export_pages(source, limit=10)
    items = [i for p in pages for i in p["items"]]
    node = next(i for i in items if i["kind"] == "node" and "Entity" in i["labels"])
    edge = next(i for i in items if i["kind"] == "edge")

    def page(*items: Any) -> dict[str, Any]:
        return {"format": "json", "offset": 0, "next_offset": None, "items": list(items)}

    # Pages of 10 with vectors are cut to the response budget: the second page starts where the
    # first one's next_offset says (9 or 10).
    second = pages[1]["offset"]
    assert second == pages[0]["next_offset"] > 0
    cases: dict[str, tuple[Any, str]] = {
        "missing page": ([pages[0], *pages[2:]], f"the page at offset {second} is missing"),
        "first page only": (pages[0], f"the page at offset {second} is missing"),
        "hostile type": (
            page(node, {**edge, "type": "KNOWS]->(b) MATCH (n) DETACH DELETE n //"}),
            "Invalid relationship type",
        ),
        "hostile label": (page({**node, "labels": ["Entity", "X) DETACH DELETE (n"]}), "Invalid label"),
        "end elsewhere": (page(edge), "neither in the export nor in project"),
        "short vector": (
            page({**node, "properties": {**node["properties"], "embedding": [0.6, 0.8], "head_embedding": [0.6, 0.8]}}),
            "The export's vectors have 2 dimensions but this project's embedder makes 384",
        ),
        "no id": (page({**node, "properties": {"name": "x"}}), "items[0]: a node without an id"),
        "nested value": (
            page({**node, "properties": {**node["properties"], "tags": {"a": 1}}}),
            "items[0]: properties.tags must be a string, number, boolean",
        ),
        "not an item": (page({"kind": "triangle"}), "items[0]: not a node or an edge"),
        "mixed vectors": (
            page({**node, "properties": {**node["properties"], "embedding": [0.6, 0.8]}}),
            "items[0]: vectors of different lengths",
        ),
    }
    target = f"{project}_target"
    for name, (content, words) in cases.items():
        file = tmp_path / f"{name}.json"
        file.write_text(json.dumps(content), encoding="utf-8")
        done = polyg_import(root, file, target, "--format", "graph-json")
        assert done.returncode == 2, (name, done.stderr)
        assert "Error:" in done.stderr and words in done.stderr, (name, done.stderr)
    not_json = tmp_path / "broken.json"
    not_json.write_text(json.dumps(pages)[:-40], encoding="utf-8")
    done = polyg_import(root, not_json, target, "--format", "graph-json")
    assert done.returncode == 2 and "not JSON" in done.stderr, done.stderr

    stats = await shared.ok("get_statistics", {"project_id": target})  # read from the store
    assert stats["graphs"]["entity"]["entities"] == 0
    assert stats["graphs"]["temporal"]["events"] == 0
    assert stats["graphs"]["causal"]["causal_links"] == 0
