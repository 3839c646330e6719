"""The spec's YAML-driven tests (test_data.yaml): embeddings, vector search over the stored
chunks, and end-to-end retrieval with the expected authors and articles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from polyg.core.ingest.parsers import find_files, parse_file
from polyg.core.ingest.service import IngestService
from polyg.runtime.app import Services
from polyg.store.falkor import VectorParam
from polyg.tools.retrieval import retrieve
from tests.tools.retrieval.conftest import load_test_data, write_corpus

pytestmark = pytest.mark.anyio

DATA = load_test_data()
PROJECT = "yaml_cases"


@pytest.fixture(scope="module")
async def corpus(services: Services, tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = write_corpus(tmp_path_factory.mktemp("corpus"))
    documents = [doc for path in find_files([folder]) for doc in parse_file(path)]
    report = await IngestService(services.ctx).ingest(PROJECT, documents)
    assert len(report.created) == 5 and report.chunks >= 5
    return PROJECT


def _names(cases: list[dict[str, Any]]) -> list[str]:
    return [case["name"] for case in cases]


@pytest.mark.parametrize("case", DATA["embedding_tests"], ids=_names(DATA["embedding_tests"]))
async def test_embedding(services: Services, case: dict[str, Any]) -> None:
    vector = await services.ctx.embed_query(case["input"])
    assert type(vector).__name__ == case["expected_type"]
    assert len(vector) == case["expected_length"]
    assert abs(sum(x * x for x in vector) - 1.0) < 1e-3  # normalised: cosine is a dot product


@pytest.mark.parametrize("case", DATA["store_tests"], ids=_names(DATA["store_tests"]))
async def test_store_vector_search(services: Services, corpus: str, case: dict[str, Any]) -> None:
    vector = await services.ctx.embed_query(case["query"])
    rows = await services.ctx.read(
        corpus,
        "CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, vecf32($v)) YIELD node, score "
        "MATCH (a:Article)-[:HAS_CHUNK]->(node) RETURN a.title, node.text ORDER BY score",
        {"k": case["limit"], "v": VectorParam(vector)},
    )
    assert len(rows) == case["expected_results"]
    assert rows[0][0] == case["expected_top_article"]


@pytest.mark.parametrize("case", DATA["retrieval_tests"], ids=_names(DATA["retrieval_tests"]))
async def test_retrieval(services: Services, corpus: str, case: dict[str, Any]) -> None:
    result = await retrieve(services, corpus, case["query"], 5)
    assert result["total_results"] == len(result["results"]) > 0
    top = result["results"][0]
    assert top["article"] in case["expected_articles"]
    assert top["authors"] == sorted(case["expected_authors"])
    assert top["author"] == ", ".join(sorted(case["expected_authors"]))
    assert set(top) >= {"author", "article", "chunk_text", "score"}
    assert isinstance(top["score"], float) and top["chunk_text"]


def test_the_corpus_covers_every_text_format() -> None:
    suffixes = {Path(item["file"]).suffix for item in DATA["corpus"]}
    assert suffixes == {".md", ".txt", ".html", ".jsonl"}  # PDF: test_ingest.py writes one
