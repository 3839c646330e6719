"""The running polyg core: opens the store and the embedder in the background, then serves.

The MCP handshake must never wait for the database (FalkorDB rebuilds its indexes when it
loads: about a minute for 100k vectors), so `start()` returns at once and every tool call
awaits `ready()`, at most `store_wait_s`: a call made while the store loads then fails with a
clear "still loading (N s so far); try again" (2005) rather than hang past the client's own
time limit. `/health` reports `loading` until then; the log says when loading starts and ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from polyg.config import Settings
from polyg.core.graph.context import GraphContext
from polyg.core.graph.edge_writer import EdgeWriter
from polyg.core.graph.entities import EntityService
from polyg.core.graph.entity_writer import EntityWriter
from polyg.core.graph.projects import ProjectService
from polyg.core.graph.relationships import RelationshipService
from polyg.core.graph.reltypes import RelTypeService
from polyg.core.memory.named import NamedGraph
from polyg.core.search.service import SearchService
from polyg.core.text import word_prior
from polyg.embed import Embedder, create_embedder
from polyg.embed.cache import CachingEmbedder
from polyg.errors import PolygError, StoreNotReady
from polyg.heap import release_freed_memory
from polyg.names import check_project_id
from polyg.store.addresses import host_port
from polyg.store.falkor import FalkorStore, parse_store_url, redact_url
from polyg.store.schema import SchemaGuard

if TYPE_CHECKING:
    from polyg.core.documents.service import DocumentService
    from polyg.core.documents.templates import TemplateService
    from polyg.core.graph.edges import EdgeService
    from polyg.core.graph.nodes import NodeService
    from polyg.core.graphrag.service import GraphRag
    from polyg.core.memory.graphs import MemoryGraphs
    from polyg.core.memory.write import MemoryWriter
    from polyg.core.recall.classifier import Classifier
    from polyg.core.recall.synthesiser import Synthesiser
    from polyg.core.search.explore import Explorer
    from polyg.core.search.retrieval import RetrievalService
    from polyg.core.traversal.service import TraversalService
    from polyg.llm import LLM

log = logging.getLogger(__name__)

Status = Literal["loading", "ok", "error"]


@dataclass
class Services:
    """What tools call: one instance per running server, created once the store is open.

    The services one toolset alone uses are made on first use, their modules imported then: a
    server that serves kg only never loads graphrag's or memory's code."""

    settings: Settings
    store: FalkorStore
    ctx: GraphContext
    entities: EntityService
    relationships: RelationshipService
    named: NamedGraph
    search: SearchService
    projects: ProjectService
    # One registry of relationship types per process: every writer registers a type (and its
    # edge id index) through it, so a type is registered once, whichever tool wrote it first.
    reltypes: RelTypeService

    @cached_property
    def memory(self) -> MemoryGraphs:
        """Spec 003's four views."""
        from polyg.core.memory.graphs import MemoryGraphs

        return MemoryGraphs.build(self.ctx, self.entities, self.named, self.search, self.reltypes)

    @cached_property
    def edges(self) -> EdgeService:
        from polyg.core.graph.edges import EdgeService

        return EdgeService(self.ctx, self.reltypes, writer=self.relationships.writer)

    @cached_property
    def nodes(self) -> NodeService:
        from polyg.core.graph.nodes import NodeService

        return NodeService(self.ctx, self.edges, writer=self.entities.writer)

    @cached_property
    def traversal(self) -> TraversalService:
        from polyg.core.traversal.service import TraversalService

        return TraversalService(self.ctx, self.reltypes)

    @cached_property
    def templates(self) -> TemplateService:
        from polyg.core.documents.templates import TemplateService
        from polyg.core.documents.user_cypher import UserCypher

        return TemplateService(self.ctx, UserCypher(self.ctx))

    @cached_property
    def documents(self) -> DocumentService:
        from polyg.core.documents.service import DocumentService

        return DocumentService(self.ctx, self.templates)

    @cached_property
    def explorer(self) -> Explorer:
        from polyg.core.search.explore import Explorer

        return Explorer(self.search, self.traversal, self.reltypes)

    # The configured LLM (None: rules only), and what uses it: graphrag's extraction, recall's
    # classifier and synthesiser, remember's extractor. Each falls back to its rules on any
    # failure or after the LLM's time limit.
    @cached_property
    def llm(self) -> LLM | None:
        from polyg.runtime.providers import llm_from_settings

        return llm_from_settings(self.settings)

    @cached_property
    def graphrag(self) -> GraphRag:
        from polyg.core.graphrag.service import GraphRag

        return GraphRag(self.ctx, self.search, self.llm, self.reltypes)

    @cached_property
    def classifier(self) -> Classifier:
        from polyg.core.recall.classifier import Classifier

        return Classifier(self.llm, timeout_s=self.settings.llm_timeout_s)

    @cached_property
    def synthesiser(self) -> Synthesiser:
        from polyg.core.recall.synthesiser import Synthesiser

        return Synthesiser(self.llm, timeout_s=self.settings.llm_timeout_s)

    @cached_property
    def memory_writer(self) -> MemoryWriter:
        from polyg.core.memory.extract_memory import MemoryExtractor
        from polyg.core.memory.write import MemoryWriter

        return MemoryWriter(self.memory, MemoryExtractor(self.llm, timeout_s=self.settings.llm_timeout_s))

    @cached_property
    def retrieval(self) -> RetrievalService:
        """One per process, so that what it learnt of each project's indexes holds across calls."""
        from polyg.core.search.retrieval import RetrievalService

        return RetrievalService(self.ctx, self.search)

    def made(self, name: str) -> bool:
        """Whether the service made on first use under `name` has been made."""
        return name in self.__dict__

    def project(self, project_id: str | None) -> str:
        return check_project_id(project_id if project_id is not None else self.settings.project)

    def forget_database_state(self) -> None:
        """Forget what was learnt about the database (indexes seen ready, node counts, schemas
        made): after a restart it rebuilds its indexes, and a database replaced by an empty
        one has none."""
        self.search.forget_database_state()
        if self.made("retrieval"):
            self.retrieval.forget_database_state()
        self.reltypes.forget_all()
        self.ctx.schema = SchemaGuard(self.store, self.ctx.schema.model_id, self.ctx.schema.dimension)


def _read_outcome(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


class Polyg:
    def __init__(self, settings: Settings, *, embedder: Embedder | None = None, sweep: bool = True) -> None:
        self.settings = settings
        self._embedder = embedder
        # Whether an open queues the vectors a crash left behind (and parked texts, tried again):
        # off for a command that only reports, which must not write while it counts.
        self._sweeps = sweep
        self._task: asyncio.Task[Services] | None = None
        self._opening_since = 0.0  # time.monotonic() when the current open began
        self._called_off: asyncio.Future[None] | None = None  # see _called_off_signal
        self._embedded: object | None = None  # EmbeddedFalkor, imported lazily
        self._services: Services | None = None
        self._revive: asyncio.Task[None] | None = None
        self._closing = False
        self._sweep: asyncio.Task[None] | None = None

    @property
    def status(self) -> Status:
        if self._task is None or not self._task.done():
            return "loading"
        return "error" if self._task.cancelled() or self._task.exception() else "ok"

    @property
    def error_message(self) -> str | None:
        if self.status != "error" or self._task is None or self._task.cancelled():
            return None
        return str(self._task.exception())

    @property
    def store_description(self) -> str:
        """What the store is, fit to show or log: a server URL without its credentials."""
        url = self.settings.server_url
        return f"falkordb-server {redact_url(url)}" if url else f"embedded {self.settings.data_dir}"

    def redact(self, text: str) -> str:
        """`text` with the store's password replaced, should an error message repeat it."""
        secrets = {self.settings.falkordb_password}
        if self.settings.server_url:
            with contextlib.suppress(PolygError):
                secrets.add(parse_store_url(self.settings.server_url)[2])
        for secret in secrets:
            if secret:
                text = text.replace(secret, "***")
        return text

    def start(self) -> None:
        """Open the store in the background; after a failed open, try again (the server may be up now)."""
        if self._task is None or (self._task.done() and self.status == "error" and not self._closing):
            self._opening_since = time.monotonic()
            self._task = asyncio.create_task(self._open(), name="polyg-open")

    @property
    def loading_s(self) -> float:
        """Seconds the store has been opening so far (0 when it is not opening)."""
        return time.monotonic() - self._opening_since if self.status == "loading" and self._task else 0.0

    async def ready(self, wait_s: float | None = None) -> Services:
        """The services once the store is open, waiting at most `wait_s` (default: as long as the
        open may take, `store_open_timeout_s`) for it; StoreNotReady after that."""
        if self._services is not None and not self._closing:
            return self._services  # every tool call asks: no timer, no shield once open
        self.start()
        assert self._task is not None
        if not self._task.done():
            log.info("a call waits for the store", extra={"loading_s": round(self.loading_s, 1)})
        open_s = self.settings.store_open_timeout_s
        limit = open_s if wait_s is None else min(wait_s, open_s)
        # Not `wait_for`: neither a timeout nor this caller's cancellation may cut the open short.
        called_off = self._called_off_signal()
        await asyncio.wait((self._task, called_off), timeout=limit, return_when=asyncio.FIRST_COMPLETED)
        if self._task.done() and not self._task.cancelled():
            return self._task.result()
        if self._closing:
            raise StoreNotReady("polyg is shutting down.")
        raise StoreNotReady(f"The store is still loading ({self.loading_s:.0f} s so far); try again.")

    def _called_off_signal(self) -> asyncio.Future[None]:
        """Done once `stop_opening` is called: the calls waiting for the store answer then."""
        if self._called_off is None:
            self._called_off = asyncio.get_running_loop().create_future()
            if self._closing:
                self._called_off.set_result(None)
        return self._called_off

    def stop_opening(self) -> None:
        """Begin closing: an open under way is called off, and the calls waiting for it answer
        at once (an HTTP server waits for its requests before it closes the core)."""
        if self._closing:
            return  # once: a second cancellation would cut short the open's own clean-up
        self._closing = True
        if self._called_off is not None and not self._called_off.done():
            self._called_off.set_result(None)
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def _open(self) -> Services:
        settings = self.settings
        log.info("opening the store", extra={"store": self.store_description})
        embedder = self._embedder or create_embedder(
            settings.embedding_provider,
            model=settings.embedding_model,
            base_url=settings.embedding_base_url,
            api_key=settings.embedding_api_key,
            dimension=settings.embedding_dimension,
        )
        if settings.embedding_cache_entries:
            embedder = CachingEmbedder(embedder, settings.embedding_cache_entries)
        # The model, and the vocabulary behind search's word prior, load in worker threads
        # while the database starts: no request pays for them or waits on the event loop.
        warm = asyncio.gather(asyncio.to_thread(embedder.load), asyncio.to_thread(word_prior.load))
        # The English pipeline (remember's extraction) loads in a thread of its own, waited for
        # by no open: the first parse waits for it instead. Only the memory toolset parses; a
        # server without it never loads the pipeline (about 90 MB of RSS it would hold), nor
        # does one told not to (`preload_nlp`).
        if settings.preload_nlp and "memory" in settings.toolsets:
            from polyg.nlp.pipeline import pipeline

            pipeline().load_in_background()
        store: FalkorStore | None = None
        try:
            store = await self._open_store()
            await warm
            # What loading the model freed goes back to the system (polyg.heap).
            await asyncio.to_thread(release_freed_memory)
        except BaseException:
            warm.cancel()
            # The loads end in their threads; their outcome is not wanted, and a gather nobody
            # reads is printed at exit as an error never retrieved (`polyg status` on a dead server).
            warm.add_done_callback(_read_outcome)
            # The embedded database stays attached (`self._embedded`): the next open reuses
            # it, and `close()` stops it.
            if store is not None:
                await store.close()
            raise
        ctx = GraphContext(store, embedder, SchemaGuard(store, embedder.model_id, embedder.dimension))
        reltypes = RelTypeService(ctx)
        search = SearchService(ctx)
        writer = EntityWriter(ctx)  # the one writer of entities, whichever toolset writes
        edge_writer = EdgeWriter(ctx, reltypes)  # and of relationships
        services = Services(
            settings,
            store,
            ctx,
            EntityService(ctx, writer),
            RelationshipService(ctx, reltypes, edge_writer),
            NamedGraph(ctx, reltypes, writer, edge_writer),
            search,
            ProjectService(ctx),
            reltypes,
        )
        self._services = services
        log.info(
            "store ready",
            extra={"store": self.store_description, "seconds": round(time.monotonic() - self._opening_since, 2)},
        )
        if self._sweeps:
            self._sweep = asyncio.create_task(self._queue_stale_vectors(services), name="polyg-sweep")
        return services

    async def _queue_stale_vectors(self, services: Services) -> None:
        """Queue entities whose vectors a crash left behind their text (see polyg.core.graph.vectorizer)."""
        try:
            for project in await services.store.list_projects():
                stale = await services.ctx.vectors.sweep(project)
                if stale:
                    log.info("queued stale vectors", extra={"project": project, "entities": stale})
        except PolygError as exc:
            log.warning("could not look for stale vectors", extra={"error": exc.message})

    async def _open_store(self) -> FalkorStore:
        settings = self.settings
        pool, timeout = settings.store_pool_size, settings.store_timeout_s
        if settings.server_url:
            store = FalkorStore.from_url(
                settings.server_url,
                password=settings.falkordb_password,
                pool_size=pool,
                timeout_s=timeout,
                read_from_replicas=settings.read_from_replicas,
                wait_replicas=settings.wait_replicas,
                wait_timeout_ms=settings.wait_replicas_timeout_ms,
                replicas=[address for r in settings.store_replicas if (address := host_port(r))],
            )
        else:
            from polyg.store.embedded import EmbeddedFalkor

            # One per Polyg, made once: an open that fails after the database started (the model
            # did not load, the load timed out) leaves it attached, and a second instance would
            # hold a second share of the database, so that `close()` would not be the last user
            # and the database would outlive polyg.
            if self._embedded is None:
                self._embedded = EmbeddedFalkor(settings.data_dir / "db")
            embedded = self._embedded
            assert isinstance(embedded, EmbeddedFalkor)
            starting = asyncio.ensure_future(asyncio.to_thread(embedded.start))
            try:
                socket = await asyncio.shield(starting)
            except asyncio.CancelledError:
                # Closed while the database starts (a client that hangs up at once): the start
                # runs on in its thread; stop the database when it is up, or it outlives us.
                with contextlib.suppress(Exception):
                    await starting
                    await asyncio.to_thread(embedded.stop)
                raise
            # While FalkorDB rebuilds its indexes after a restart (minutes for 100k vectors) it
            # may answer nothing at all; the process manager knows how to wait through that.
            await asyncio.to_thread(embedded.wait_until_loaded, settings.store_open_timeout_s)
            store = FalkorStore(unix_socket=socket, pool_size=pool, timeout_s=timeout)
        store.on_unreachable = self._database_unreachable
        try:
            await store.wait_until_loaded(settings.store_open_timeout_s)
        except PolygError:
            await store.close()
            raise
        # A server polyg does not start may have no per-query memory capacity (the embedded
        # one is started with it): see `FalkorStore.limit_query_memory`.
        await store.limit_query_memory()
        return store

    async def _database_unreachable(self) -> None:
        """A store call could not reach the database: it died, or it restarted under us (a
        server restarts, another polyg process revives the embedded one). Either way it loads
        its data again and rebuilds its indexes, so what was learnt about them is forgotten;
        the embedded database is started again if it is down."""
        if self._closing:
            return
        if self._embedded is not None:
            if self._revive is None or self._revive.done():
                self._revive = asyncio.create_task(self._revive_embedded(), name="polyg-revive")
            # Shielded: a caller that gives up must not cut a start short (see `close`).
            await asyncio.shield(self._revive)
        if self._services is not None:
            self._services.forget_database_state()

    async def _revive_embedded(self) -> None:
        """Start the embedded database again if it died (it replays its AOF on start)."""
        from polyg.store.embedded import EmbeddedFalkor

        embedded = self._embedded
        assert isinstance(embedded, EmbeddedFalkor)
        if await asyncio.to_thread(embedded.is_alive):
            return
        log.warning("embedded database stopped answering; starting it again")
        try:
            await asyncio.to_thread(embedded.start)
        except PolygError as exc:
            log.error("could not restart the embedded database", extra={"error": exc.message})

    async def project_count(self) -> int | None:
        if self._services is None:
            return None
        return len(await self._services.store.list_projects())

    async def close(self) -> None:
        self.stop_opening()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        if self._sweep is not None:
            self._sweep.cancel()
            await asyncio.gather(self._sweep, return_exceptions=True)
        if self._revive is not None and not self._revive.done():
            # A start under way would attach anew after our stop, which would then not be the
            # last user's, and the database would outlive us: let it finish first (the vectors
            # still queued are then stored, not left waiting on it).
            log.info("waiting for the embedded database restart to finish before stopping it")
            await asyncio.gather(self._revive, return_exceptions=True)
        if self._services is not None:
            # Vectors still queued are stored first; any left over are found by the next sweep.
            await self._services.ctx.vectors.close()
            await self._services.store.close()
            self._services.ctx.embedder.close()
            if self._services.made("graphrag"):
                await self._services.graphrag.close()
        if self._embedded is not None:
            from polyg.store.embedded import EmbeddedFalkor

            assert isinstance(self._embedded, EmbeddedFalkor)
            await asyncio.to_thread(self._embedded.stop)
