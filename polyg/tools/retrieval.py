"""The `retrieval` toolset (spec 001): `graph_retrieve` answers from document chunks expanded
to their articles and authors; `add_article` lets an agent add a document."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from polyg.core import limits
from polyg.core.ingest.parsers import Document
from polyg.core.ingest.service import IngestService
from polyg.core.search.retrieval import DEFAULT_LIMIT, MAX_LIMIT, Retrieved
from polyg.core.text.chunking import ChunkSpec
from polyg.runtime.app import Services
from polyg.tools import shaping
from polyg.tools.registry import Params, Toolset, degraded_field

retrieval = Toolset(
    "retrieval",
    instructions=(
        "retrieval: documents (articles with authors, cut into chunks) searched by graph_retrieve, which "
        "returns the best chunks with their article, authors and neighbouring chunks; add_article "
        "adds a document."
    ),
)


class GraphRetrieveParams(Params):
    query: str = Field(description="A question in natural language, e.g. 'Who wrote about GPT-4?'.")
    limit: int | None = Field(
        default=None, ge=1, le=MAX_LIMIT, description=f"Chunks to return (1-{MAX_LIMIT}; default {DEFAULT_LIMIT})."
    )


class Context(BaseModel):
    previous: str | None
    next: str | None


class RetrieveResult(BaseModel):
    author: str
    article: str
    chunk_text: str
    score: float
    authors: list[str]
    article_id: str
    chunk_id: str
    url: str | None
    date: str | None
    heading: str | None
    position: int
    entities: list[str]
    vector_score: float | None
    context: Context


class RetrieveResults(BaseModel):
    results: list[RetrieveResult]
    total_results: int
    omitted: int | None = None
    note: str | None = None
    degraded: str | None = degraded_field()


# What one add_article call may carry. A 10 MB text took more than 300 s (and 1.1 GB of the
# server) in one call; half a million characters (a long report: some 600 chunks) is seconds
# of embedding. Larger documents go through `polyg ingest`, which reads files.
MAX_ARTICLE_TEXT = 500_000
MAX_AUTHORS = 100
MAX_URL = 2_048


class AddArticleParams(Params):
    title: str = Field(max_length=limits.MAX_NAME, description="The article's title.")
    authors: list[Annotated[str, Field(max_length=limits.MAX_NAME)]] = Field(
        max_length=MAX_AUTHORS, description="Its authors' names."
    )
    text: str = Field(
        max_length=MAX_ARTICLE_TEXT,
        description=(
            "Its full text; headings as Markdown '#' lines, paragraphs by blank lines. At most "
            f"{MAX_ARTICLE_TEXT:,} characters: longer documents go through `polyg ingest`."
        ),
    )
    url: str | None = Field(
        default=None, max_length=MAX_URL, description="Where it comes from; adding the same url again updates it."
    )
    date: str | None = Field(default=None, max_length=64, description="Its date (ISO 8601 preferred).")


class ArticleAdded(BaseModel):
    article_id: str
    title: str
    authors: list[str]
    chunks: int
    status: Literal["created", "updated", "unchanged"]


def shape(found: Retrieved) -> dict[str, Any]:
    return {
        "author": ", ".join(found.authors),
        "article": found.title,
        "chunk_text": found.text,
        "score": round(found.score, 6),
        "authors": list(found.authors),
        "article_id": found.article_id,
        "chunk_id": found.chunk_id,
        "url": found.url,
        "date": found.date,
        "heading": found.heading,
        "position": found.position,
        "entities": list(found.entities),
        "vector_score": None if found.vector_score is None else round(found.vector_score, 6),
        "context": {"previous": found.before, "next": found.after},
    }


async def retrieve(s: Services, project_id: str | None, query: str, limit: int) -> dict[str, Any]:
    """What graph_retrieve and `polyg query` answer."""
    found = await s.retrieval.retrieve(s.project(project_id), query, limit)
    answer: dict[str, Any] = {"results": [shape(item) for item in found], "total_results": len(found)}
    omitted = shaping.keep_fitting(answer, "results", at_least_one=True)
    if omitted:
        answer.update(total_results=len(answer["results"]), omitted=omitted)
        answer["note"] = shaping.left_out(len(answer["results"]), len(found), "ask for fewer (limit).")
    return answer


@retrieval.tool(GraphRetrieveParams, RetrieveResults, read_only=True, title="Graph retrieve")
async def graph_retrieve(s: Services, p: GraphRetrieveParams) -> RetrieveResults:
    """Answer a question from the ingested documents: the chunks that match it best (by meaning
    and by words), each with its article, its authors, the entities it mentions and the chunks
    around it."""
    return shaping.typed(
        RetrieveResults, await retrieve(s, p.project_id, p.query, p.limit or s.settings.retrieval_limit)
    )


@retrieval.tool(AddArticleParams, ArticleAdded, idempotent=True, title="Add article")
async def add_article(s: Services, p: AddArticleParams) -> ArticleAdded:
    """Add a document: it is cut into chunks, embedded and linked to its authors and to the
    entities it names. The same url (or, without one, the same title) again replaces it."""
    source = f"article:{p.url}" if p.url else f"article-title:{p.title}"
    doc = Document(
        p.title, tuple(dict.fromkeys(a.strip() for a in p.authors if a.strip())), p.text, source, p.url, p.date
    )
    spec = ChunkSpec(s.settings.chunk_size, s.settings.chunk_overlap)
    report = await IngestService(s.ctx, spec).ingest(s.project(p.project_id), [doc])
    status = "created" if report.created else "updated" if report.updated else "unchanged"
    return shaping.typed(
        ArticleAdded,
        {
            "article_id": report.article_ids[source],
            "title": p.title,
            "authors": list(doc.authors),
            "chunks": report.chunks,
            "status": status,
        },
    )
