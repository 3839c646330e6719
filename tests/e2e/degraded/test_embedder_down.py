"""Degrade, don't fail: with the embeddings endpoint down, every search tool answers from words
and the graph and says so in `degraded`, instead of an error (polyg.core.degraded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.mcp_helpers import kg_session

pytestmark = pytest.mark.anyio

REF = "2026-03-02T10:00:00Z"


async def test_search_tools_answer_by_words_while_the_embedder_is_down(tmp_path: Path) -> None:
    fake = FakeOpenAIServer(dimension=16).start()
    env = {
        "POLYG_EMBEDDING_PROVIDER": "openai",
        "POLYG_EMBEDDING_BASE_URL": fake.base_url,
        "POLYG_EMBEDDING_MODEL": "fake-embedding",
        "POLYG_EMBEDDING_DIMENSION": str(fake.dimension),
        "POLYG_EMBEDDING_CACHE_ENTRIES": "0",
    }
    try:
        async with kg_session("stdio", tmp_path, "--toolsets", "all", "--project", "dg", **env) as mcp:
            ada = {"name": "Ada Lovelace", "entityType": "person", "observations": ["She wrote the first program."]}
            await mcp.ok("create_entities", {"entities": [ada]})
            await mcp.ok(
                "remember", {"content": "The auth service crashed after the Redis upgrade.", "reference_time": REF}
            )
            await mcp.ok(
                "add_article",
                {"title": "GPT-4 report", "authors": ["Alice"], "text": "GPT-4 is a multimodal model."},
            )
            healthy = await mcp.ok("search_nodes", {"query": "Ada Lovelace"})
            assert "degraded" not in healthy

            url = fake.base_url
            fake.stop()  # the embeddings endpoint goes down

            found = await mcp.ok("search_nodes", {"query": "first program"})
            assert [e["name"] for e in found["entities"]] == ["Ada Lovelace"]
            assert found["degraded"].startswith("embedder failed: ")
            assert url in found["degraded"]

            semantic = await mcp.ok("search_semantic", {"query": "first program"})
            assert "Ada Lovelace" in [r["text"] for r in semantic["results"]]
            assert semantic["degraded"].startswith("embedder failed: ")

            graph = await mcp.ok("graph_enhanced_search", {"query": "first program"})
            assert graph["results"][0]["entity_name"] == "Ada Lovelace"
            assert graph["degraded"].startswith("embedder failed: ")

            explored = await mcp.ok("explore_neighborhoods", {"search_terms": ["program"]})
            assert explored["degraded"].startswith("embedder failed: ")

            retrieved = await mcp.ok("graph_retrieve", {"query": "multimodal model"})
            assert retrieved["results"][0]["article"] == "GPT-4 report"
            assert retrieved["degraded"].startswith("embedder failed: ")

            recalled = await mcp.ok("recall", {"query": "Why did the auth service crash?", "reference_time": REF})
            assert "Redis upgrade" in str(recalled["evidence"])
            assert recalled["degraded"].startswith("embedder failed: ")
    finally:
        fake.stop()
