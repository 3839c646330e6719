"""The transport matrix, once: every toolset answers the same over Streamable HTTP as over stdio.

Each toolset's own tests run over stdio (one server per module). Here one script of calls,
representative of every toolset (kg, memory-compat, knowledge, memory, graphrag, retrieval),
runs against two servers, one per transport, each on its own empty store: the tools, prompts
and resource templates listed, each call's outcome (success or error, its error code, its text
and its structured content, with every polyg result invariant checked by
tests/mcp_helpers.py `call`), the progress notifications of a long call, a resource read, the
largest accepted payload and Unicode, and a protocol-level refusal. The two transcripts must be
equal once what differs by nature is put aside: ids and the times things were written (both
minted by the server), which are replaced by tokens in order of appearance.

HTTP specifics (sessions, headers, auth, the health endpoint) are tests/e2e/test_http.py's.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import TextResourceContents

from polyg.core.graphrag.extract import BATCH
from tests.mcp_helpers import KG, call, check_result, kg_session

pytestmark = pytest.mark.anyio

PROJECT = "matrix"
# Two batches of extract_all_relationships: two progress notifications.
ENTITIES = BATCH + 7
# The answers compared do not depend on the model, only on both servers using the same one.
HASHING = {"POLYG_EMBEDDING_PROVIDER": "hashing"}
LONGEST_TEXT = "d" * 16_384  # the kg toolset's largest accepted description and observation

_ID = re.compile(r"\b[a-z]{2,5}_[0-9a-f]{12,}(?![0-9a-f])")  # ent_…, rel_…_USES, art_…_c0
# A time the server stamped (now); the times the script gives are in 2024 and kept as they are.
_NOW = re.compile(r"\b(?!2024-)\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")


@pytest.fixture(scope="module")
async def servers(servers_root: Path) -> AsyncIterator[dict[str, KG]]:
    """One server per transport, all toolsets, each on its own empty store."""
    async with contextlib.AsyncExitStack() as stack:
        yield {
            transport: await stack.enter_async_context(
                kg_session(
                    transport,
                    servers_root / f"transport-matrix-{transport}",
                    *("--toolsets", "all", "--project", PROJECT),
                    **HASHING,
                )
            )
            for transport in ("stdio", "http")
        }


class Transcript:
    """What one server answered, in order, with ids and stamped times tokenised."""

    def __init__(self, kg: KG) -> None:
        self.kg = kg
        self.entries: list[Any] = []
        self._tokens: dict[str, str] = {}

    def _plain(self, value: Any) -> Any:
        if isinstance(value, str):
            value = _NOW.sub("<now>", value)
            return _ID.sub(lambda m: self._tokens.setdefault(m[0], f"<id{len(self._tokens)}>"), value)
        if isinstance(value, dict):
            return {self._plain(k): self._plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._plain(v) for v in value]
        return value

    def note(self, what: str, value: Any) -> None:
        self.entries.append((what, self._plain(value)))

    async def call(self, tool: str, code: int | None = None, **args: Any) -> dict[str, Any]:
        """A call that must succeed (code None) or fail with `code`; its outcome is noted."""
        result = await call(self.kg.client, tool, args)
        assert result.is_error == (code is not None) and result.error_code == code, (tool, args, result)
        self.note(tool, {"error": result.error_code, "text": result.text, "structured": result.structured})
        return result.structured


async def made_entity(t: Transcript, project: dict[str, str], name: str, observation: str) -> str:
    made = await t.call("create_entity", **project, name=name, type="concept", observations=[observation])
    return str(made["entity"]["id"])


async def script(t: Transcript) -> None:
    client = t.kg.client
    tools = (await client.list_tools()).tools
    t.note("tools/list", [tool.model_dump(mode="json", exclude_none=True) for tool in tools])
    t.note(
        "prompts/list", [p.model_dump(mode="json", exclude_none=True) for p in (await client.list_prompts()).prompts]
    )
    templates = (await client.list_resource_templates()).resource_templates
    t.note("resources/templates/list", [r.model_dump(mode="json", exclude_none=True) for r in templates])

    # kg: the largest accepted texts and Unicode survive the transport; errors answer alike.
    made = await t.call(
        "create_entity",
        name="café ☕ 東京",
        type="ort",
        description=LONGEST_TEXT,
        observations=[LONGEST_TEXT, "naïve — «quoted»"],
    )
    entity = made["entity"]["id"]
    peer = (await t.call("create_entity", name="peer", type="ort"))["entity"]["id"]
    await t.call("create_relationship", source_id=entity, target_id=peer, type="uses")
    await t.call("get_entity", entity_id=entity)
    await t.call("get_relationships", entity_id=entity)
    await t.call("get_entity", code=4004, entity_id="ent_000000000000dead")
    await t.call("create_entity", code=4002, name=3)
    await t.call("list_entities")

    # memory-compat: the entities extract_all_relationships reads, in one call.
    entities = [
        {"name": f"Service {i}", "entityType": "service", "observations": [f"It uses Service {(i + 1) % ENTITIES}."]}
        for i in range(ENTITIES)
    ]
    await t.call("create_entities", entities=entities)
    await t.call("search_nodes", query="It uses Service 4.", limit=1)  # one: ties rank in any order
    await t.call("open_nodes", names=["Service 1", "Nobody"])
    await t.call("create_relations", code=4002, relations="none")

    # graphrag: progress notifications of a long call, then its results.
    heard: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    result = await client.call_tool("extract_all_relationships", {}, progress_callback=on_progress)
    await check_result(client, "extract_all_relationships", result)
    assert not result.is_error and len(heard) == 2, (result, heard)
    extracted = dict(result.structured_content or {})
    # The entities listed are the first 100 in the order of their ids, which each server mints
    # anew: their number is compared here, one entity's extraction whole below.
    extracted["entities"] = len(extracted["entities"])
    t.note("extract_all_relationships", {"structured": extracted, "progress": heard})
    await t.call("add_observation", entity_id=peer, observation="It uses Service 0.")
    await t.call("extract_entity_relationships", entity_id=peer)
    # graphrag on a small graph of its own (among the ring above, ties would rank in id order).
    gr = {"project_id": "graphrag"}
    replay = await made_entity(t, gr, "Hippocampal Replay", "Replay consolidates memories during sleep.")
    consolidation = await made_entity(t, gr, "Memory Consolidation", "Stabilising a memory trace.")
    cortex = await made_entity(t, gr, "Neocortex", "Outer layer of the brain.")
    await t.call(
        "add_entity_relationship",
        **gr,
        source_id=replay,
        target_id=consolidation,
        relation_type="implements",
        weight=0.9,
    )
    await t.call(
        "add_entity_relationship",
        **gr,
        source_id=consolidation,
        target_id=cortex,
        relation_type="relates_to",
        weight=0.5,
    )
    await t.call("graph_enhanced_search", **gr, query="memory consolidation patterns", depth=2)
    await t.call("get_entity_neighbors", **gr, entity_id=replay, depth=2)
    await t.call("build_local_graph", **gr, entity_ids=[replay, cortex])
    await t.call("get_graph_statistics", **gr)
    await t.call(
        "add_entity_relationship",
        code=4004,
        **gr,
        source_id=replay,
        target_id="ent_000000000000dead",
        relation_type="uses",
    )

    # knowledge: a node made with its relationship, a neighbourhood, a path and its strength.
    nodes = await t.call(
        "manage_nodes",
        operation="create",
        nodes=[
            {"name": "Miles Davis", "summary": "American jazz trumpeter", "node_type": "Person"},
            {
                "name": "Charlie Parker",
                "summary": "American jazz saxophonist",
                "node_type": "Person",
                "relationships": [
                    {
                        "target_id": "Miles Davis",
                        "relationship_type": "COLLABORATED_WITH",
                        "relevance_strength": "strong",
                        "properties": {"when": "1945-1948"},
                    }
                ],
            },
        ],
    )
    assert [r["status"] for r in nodes["results"]] == ["success", "success"], nodes
    miles, charlie = (r["node_id"] for r in nodes["results"])
    await t.call("explore_neighborhoods", search_terms=["saxophonist"], search_strategy="text")
    await t.call("find_relationship_paths", node_pairs=[{"source_node_id": charlie, "target_node_id": miles}])
    await t.call("manage_nodes", code=4002, operation="explode", nodes=[])

    # memory
    await t.call("add_event", description="Auth service crashed", occurred_at="2024-01-08T10:00:00Z")
    await t.call("add_fact", subject="Alice", predicate="works_on", object="Billing", valid_from="2024-01-01")
    await t.call("get_facts", subject="Alice", as_of="2024-06-01")
    await t.call("query_timeline", **{"from": "2024-01-01", "to": "2024-12-31"})
    await t.call("add_fact", code=4002, subject="Alice", predicate="works_on", object="Billing", valid_from="soon")

    # retrieval
    await t.call("add_article", title="GPT-4 report", authors=["Alice", "Bob"], text="GPT-4 is a multimodal model.")
    await t.call("graph_retrieve", query="Who wrote about GPT-4?")
    await t.call("graph_retrieve", code=5001, query="   ")

    # A resource read, and a tool nobody serves (a refusal of the protocol, not a tool error).
    page = await client.read_resource(f"polyg://{PROJECT}/entity/{entity}")
    t.note("resources/read", [c.text if isinstance(c, TextResourceContents) else None for c in page.contents])
    try:
        refused = await client.call_tool("no_such_tool", {})
    except MCPError as exc:
        t.note("no_such_tool", {"protocol_error": exc.error.code, "message": exc.error.message})
    else:
        t.note("no_such_tool", {"is_error": refused.is_error, "content": refused.model_dump(mode="json")["content"]})


async def test_http_answers_as_stdio_does(servers: dict[str, KG]) -> None:
    """The same script over each transport; every entry compared apart, so a failure names the
    first call whose answer differs."""
    stdio, http = Transcript(servers["stdio"]), Transcript(servers["http"])
    await script(stdio)
    await script(http)
    assert [what for what, _ in http.entries] == [what for what, _ in stdio.entries]
    for (what, over_stdio), (_, over_http) in zip(stdio.entries, http.entries, strict=True):
        assert over_http == over_stdio, f"{what}: {difference(over_stdio, over_http)}"


def difference(stdio: Any, http: Any, at: str = "") -> str:
    """Where two answers first differ, and how (pytest's own diff cuts long ones short)."""
    if isinstance(stdio, dict) and isinstance(http, dict):
        if stdio.keys() != http.keys():
            return f"{at or '/'}: keys {sorted(stdio)} over stdio, {sorted(http)} over HTTP"
        return next((difference(stdio[k], http[k], f"{at}/{k}") for k in stdio if stdio[k] != http[k]), "")
    if isinstance(stdio, list) and isinstance(http, list) and len(stdio) == len(http):
        pairs = enumerate(zip(stdio, http, strict=True))
        return next((difference(a, b, f"{at}/{i}") for i, (a, b) in pairs if a != b), "")
    return f"{at or '/'}: {stdio!r:.300} over stdio, {http!r:.300} over HTTP"
