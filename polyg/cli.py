"""The `polyg` command: serve, init-schema, status, doctor, import, export, ingest, query."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from polyg.errors import ConfigError, InvalidParams, NotFound, PolygError

if TYPE_CHECKING:
    # Imported where settings are loaded: the configuration's models (pydantic, its settings
    # sources, yaml) are ~40% of `polyg --help`'s CPU, and help and --version need none of it.
    from polyg.config import Settings

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Graph memory for AI agents over MCP.")

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="YAML configuration file.")]
ProjectOpt = Annotated[str | None, typer.Option("--project", help="Default project id.")]
StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="falkor://host:port for a FalkorDB server, falkor+cluster://host:port[,host:port...] for a cluster; "
        "default embedded.",
    ),
]
DataDirOpt = Annotated[Path | None, typer.Option("--data-dir", help="Embedded database directory.")]
LogLevelOpt = Annotated[str | None, typer.Option("--log-level", help="DEBUG, INFO, WARNING or ERROR.")]


def _version(value: bool) -> None:
    if value:
        from polyg import __version__

        print(f"polyg {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Graph memory for AI agents over MCP."""


def _settings(config: Path | None, **overrides: Any) -> Settings:
    from polyg.config import load_settings

    try:
        settings = load_settings(config, **overrides)
        if not settings.server_url:
            _usable_directory(settings.data_dir, "data directory")
    except PolygError as exc:
        _fail(exc)
    return settings


def _usable_directory(path: Path, what: str) -> None:
    """Create `path` if need be and check polyg can write there: a clear error at start, not a
    traceback from deep inside the database's start."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"Cannot use {path} as the {what}: {exc.strerror or exc}.") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"Cannot use {path} as the {what}: not writable.")


def _setup_logging(settings: Settings, stderr_level: str | None = None) -> None:
    from polyg.logs import setup_logging

    try:
        _usable_directory(settings.resolved_log_dir, "log directory")
        setup_logging(
            settings.log_level,
            settings.resolved_log_dir,
            max_bytes=settings.log_max_bytes,
            backup_count=settings.log_backup_count,
            retention_days=settings.log_retention_days,
            stderr_level=stderr_level,
        )
    except (PolygError, OSError) as exc:
        _fail(exc if isinstance(exc, PolygError) else ConfigError(f"Cannot write the log: {exc}."))


def _fail(exc: PolygError) -> NoReturn:
    print(f"Error: {exc.message} (code {exc.code})", file=sys.stderr)
    raise typer.Exit(2)


@app.command()
def serve(
    transport: Annotated[str | None, typer.Option(help="stdio (default) or http.")] = None,
    host: Annotated[str | None, typer.Option(help="HTTP bind address (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="HTTP port (default 8765).")] = None,
    toolsets: Annotated[
        str | None, typer.Option(help="Toolsets, comma-separated, or 'all' (default: kg,memory).")
    ] = None,
    api_key: Annotated[str | None, typer.Option("--api-key", help="Bearer key required over HTTP.")] = None,
    project: ProjectOpt = None,
    store: StoreOpt = None,
    data_dir: DataDirOpt = None,
    log_level: LogLevelOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Serve MCP over stdio (for desktop clients) or Streamable HTTP at /mcp."""
    settings = _settings(
        config,
        transport=transport,
        host=host,
        port=port,
        toolsets=toolsets,
        api_key=api_key,
        project=project,
        store=store,
        data_dir=data_dir,
        log_level=log_level,
    )
    _setup_logging(settings)
    # SIGTERM (what process managers send) and Ctrl-C take one path: the server stops, and the
    # embedded database is shut down if no other polyg process uses it. This handler covers the
    # moments no event loop handles them (start-up: it interrupts even a slow import at once):
    # the stdio server cancels itself from its loop (polyg.stdio), and uvicorn handles them while
    # the HTTP server runs. It replaces asyncio's own Ctrl-C handler, which only cancels the main
    # task, so that an import under way runs to its end first; and a SIGINT that a parent ignores
    # (a shell starting a background job hands that on) stops the server all the same.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _interrupt)
    try:
        asyncio.run(_serve(settings))
    except PolygError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        pass


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


async def _serve(settings: Settings) -> None:
    from polyg.runtime.app import Polyg

    core = Polyg(settings)
    if settings.transport == "http":
        from polyg.http import serve_http

        await serve_http(core)
        return
    from polyg.stdio import serve_stdio

    await serve_stdio(core)


@app.command("init-schema")
def init_schema(
    project: Annotated[list[str] | None, typer.Option("--project", help="Project(s); default: configured.")] = None,
    store: StoreOpt = None,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Create the indexes of the given projects now (the server also does it on first write), and
    the initial relationship types of spec 000 (CHILD_OF, INFLUENCED_BY, ...), keeping any a user
    has already described."""
    settings = _settings(config, store=store, data_dir=data_dir)

    async def run() -> list[str]:
        from polyg.runtime.app import Polyg

        core = Polyg(settings)
        try:
            services = await core.ready()
            names = project or [settings.project]
            for name in names:
                await services.ctx.schema.ensure(services.project(name))
                await services.reltypes.seed(services.project(name))
            return names
        finally:
            await core.close()

    try:
        done = asyncio.run(run())
    except PolygError as exc:
        _fail(exc)
    print(f"Schema ready for: {', '.join(done)}")


@app.command()
def status(store: StoreOpt = None, data_dir: DataDirOpt = None, config: ConfigOpt = None) -> None:
    """Show the store and its projects."""
    settings = _settings(config, store=store, data_dir=data_dir, embedding_provider="hashing")

    async def run(services: Any) -> tuple[list[Any], dict[str, int], dict[str, int]]:
        projects = await services.projects.names()
        stats = [await services.projects.stats(name) for name in projects]
        parked = {p: await services.ctx.vectors.parked(p) for p in projects}
        unfinished = {p: await services.memory_writer.unfinished(p) for p in projects}
        return stats, {p: n for p, n in parked.items() if n}, {p: n for p, n in unfinished.items() if n}

    try:
        stats, parked, unfinished = asyncio.run(_with_core(settings, run, sweep=False))
    except PolygError as exc:
        _fail(exc)
    from polyg.runtime.app import Polyg

    print(f"store: {Polyg(settings).store_description}")
    print(f"projects ({len(stats)}): {', '.join(s.project for s in stats) or '-'}")
    for s in stats:
        print(
            f"  {s.project}: {_counts(s.nodes, 'nodes', s.labels)}, {_counts(s.edges, 'edges', s.relationship_types)}, "
            f"schema v{s.schema_version or '-'}"
        )
    if parked:
        counts = ", ".join(f"{p} {n}" for p, n in parked.items())
        print(f"entities whose text the embedder rejects (no vectors until it changes): {counts}")
    if unfinished:
        counts = ", ".join(f"{p} {n}" for p, n in unfinished.items())
        print(f"memories whose facts or causal links were not all written (remember them again): {counts}")


@app.command()
def doctor(store: StoreOpt = None, data_dir: DataDirOpt = None, config: ConfigOpt = None) -> None:
    """Check the install (database binaries, embedding model, NLP pipeline), the configuration,
    the data directory and the store; say what to fix. Exits 1 when a check fails."""
    from polyg.doctor import report, run_checks

    if report(run_checks(config, {"store": store, "data_dir": data_dir})):
        raise typer.Exit(1)


def _counts(total: int, what: str, by_name: dict[str, int]) -> str:
    parts = ", ".join(f"{name} {count}" for name, count in sorted(by_name.items()))
    return f"{total} {what}" + (f" ({parts})" if parts else "")


FormatOpt = Annotated[str, typer.Option("--format", help="memory-jsonl or json.")]
ImportFormatOpt = Annotated[
    str,
    typer.Option("--format", help="memory-jsonl, json or graph-json (export_graph's pages); default: by content."),
]


async def _with_core(settings: Settings, work: Any, *, sweep: bool = True) -> Any:
    from polyg.runtime.app import Polyg
    from polyg.store.connection import reads_from_primary

    # A one-shot command loads the English pipeline on its first parse, if any, not at open.
    core = Polyg(settings.model_copy(update={"preload_nlp": False}), sweep=sweep)
    try:
        # A command (import, ingest) reads what it decides its writes on, and one run has no
        # read load to spread: never from a replica.
        with reads_from_primary():
            return await work(await core.ready())
    finally:
        await core.close()


@app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="File to load.")],
    fmt: ImportFormatOpt = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, max=1000)] = 256,
    project: ProjectOpt = None,
    store: StoreOpt = None,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Load a memory-server JSONL file, a polyg JSON export or the pages of the memory toolset's
    export_graph (format json) into a project, in batches."""
    from rich.console import Console
    from rich.progress import Progress

    from polyg.core.transfer import graph_import
    from polyg.core.transfer import service as files

    settings = _settings(config, project=project, store=store, data_dir=data_dir)
    try:
        kind = files.detect_format(path) if fmt == "auto" else fmt
        if kind not in ("memory-jsonl", "json", "graph-json"):
            raise PolygError(f"Unknown format {fmt!r}: use memory-jsonl, json or graph-json.", code=4002)
        # The whole file is decoded (and a JSON export parsed and checked) before anything is written.
        total = files.check_text_file(path) if kind == "memory-jsonl" else None
        document = files.load_json(path) if kind == "json" else {}
        graph = None
        if kind == "graph-json":
            pages = graph_import.read_pages(path, files.read_text(path))
            graph = graph_import.check(graph_import.whole_export(pages))
        elif kind == "json" and (items := files.export_items(document)) is not None:
            graph = graph_import.check(items)  # `polyg export`'s items are export_graph's
    except PolygError as exc:
        _fail(exc)

    async def work(services: Any) -> Any:
        from polyg.core.transfer.service import Transfer

        transfer = Transfer(services.named)
        target = services.project(None)
        # On stderr: stdout stays free for data (and `polyg export` writes there).
        with Progress(console=Console(stderr=True), transient=False) as bar:
            task = bar.add_task(f"importing into {target}", total=total)

            def advance(n: int) -> None:
                bar.advance(task, n)

            if graph is not None:
                bar.update(task, total=len(graph.nodes) + len(graph.edges))
                importer = graph_import.GraphImport(services.ctx, services.memory.temporal)
                report: Any = await importer.restore(target, graph, batch_size=batch_size, progress=advance)
            elif kind == "json":
                bar.update(task, total=len(document.get("entities", [])) + len(document.get("relationships", [])))
                report = await transfer.import_json(target, document, batch_size=batch_size, progress=advance)
            else:
                report = await transfer.import_memory_jsonl(
                    target, files.read_lines(path), batch_size=batch_size, progress=advance
                )
            # The text is stored; the import is done when the vectors are too.
            vectors = bar.add_task("storing vectors", total=None)

            def stored(done: int, total: int) -> None:
                # Nothing left to store (the vectors came with the text, or were stored while
                # it was written) is a finished bar, not one at 0 of 0.
                bar.update(vectors, completed=done if total else 1, total=total or 1)

            if not await transfer.wait_for_vectors(target, stored):
                print(
                    "warning: the embedder is failing; vectors still missing are made the next time "
                    "polyg opens this store",
                    file=sys.stderr,
                )
            return report

    try:
        report = asyncio.run(_with_core(settings, work))
    except PolygError as exc:
        _fail(exc)
    if isinstance(report, graph_import.Report):
        print(
            f"created {report.nodes_created} nodes, {report.edges_created} relationships; "
            f"{report.already_there} already there",
            file=sys.stderr,
        )
        return
    print(
        f"created {report.entities_created} entities, {report.relations_created} relations; "
        f"added {report.observations_added} observations; skipped {len(report.skipped)} lines",
        file=sys.stderr,
    )
    for number, reason in report.skipped[:20]:
        print(f"  skipped{f' line {number}' if number else ''}: {reason}", file=sys.stderr)
    if len(report.skipped) > 20:
        print(f"  ... and {len(report.skipped) - 20} more", file=sys.stderr)
    if report.skipped:
        # A partial import is not a success: a script must see it.
        print(
            f"Error: {len(report.skipped)} of the file's items were skipped (listed above); the rest was imported.",
            file=sys.stderr,
        )
        raise typer.Exit(1)


@app.command()
def export(
    fmt: FormatOpt = "json",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default stdout).")] = None,
    embeddings: Annotated[
        bool, typer.Option("--embeddings", help="Include the vectors (json; by default an import recomputes them).")
    ] = False,
    project: ProjectOpt = None,
    store: StoreOpt = None,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Write a project as memory-server JSONL or as polyg JSON (everything polyg stores)."""
    if fmt not in ("memory-jsonl", "json"):
        _fail(PolygError(f"Unknown format {fmt!r}: use memory-jsonl or json.", code=4002))
    settings = _settings(config, project=project, store=store, data_dir=data_dir)

    if output is not None and not output.parent.is_dir():
        _fail(ConfigError(f"Cannot write {output}: the folder {output.parent} does not exist."))

    async def work(services: Any) -> int:
        from polyg.core.transfer.service import Transfer

        transfer = Transfer(services.named)
        # Said before any file is made: a mistyped name must not leave an empty export.
        target = await _existing_project(services)
        try:
            out = output.open("w", encoding="utf-8") if output else sys.stdout
        except OSError as exc:
            raise ConfigError(f"Cannot write {output}: {exc.strerror or exc}.") from None
        try:
            if fmt == "json":
                return await transfer.export_json(target, out, embeddings=embeddings)
            return await transfer.export_memory_jsonl(target, out)
        finally:
            if output:
                out.close()

    try:
        count = asyncio.run(_with_core(settings, work))
    except PolygError as exc:
        _fail(exc)
    print(f"exported {count} items", file=sys.stderr)


async def _existing_project(services: Any) -> str:
    """The project the command is for, which must exist: a mistyped name is an error, not an
    empty export or answer."""
    target: str = services.project(None)
    projects = await services.store.list_projects()
    if target not in projects:
        known = ", ".join(projects) or "none"
        raise NotFound(f"Project {target!r} does not exist (projects: {known}).")
    return target


IncludeOpt = Annotated[
    list[str] | None, typer.Option("--include", help="Glob of files to take in folders (repeatable).")
]


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (searched recursively).")],
    author: Annotated[list[str] | None, typer.Option("--author", help="Author of every document (repeatable).")] = None,
    title: Annotated[str | None, typer.Option("--title", help="Title of the document (one file).")] = None,
    include: IncludeOpt = None,
    delete: Annotated[bool, typer.Option("--delete", help="Remove the articles of these paths instead.")] = False,
    chunk_size: Annotated[int | None, typer.Option("--chunk-size", help="Tokens per chunk (16-254).")] = None,
    chunk_overlap: Annotated[
        int | None, typer.Option("--chunk-overlap", help="Tokens shared by adjacent chunks.")
    ] = None,
    project: ProjectOpt = None,
    store: StoreOpt = None,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Ingest documents (Markdown, text, HTML, PDF, JSONL) as articles, authors and chunks."""
    import json

    from polyg.core.ingest.parsers import find_files
    from polyg.core.text.chunking import ChunkSpec

    settings = _settings(
        config, project=project, store=store, data_dir=data_dir, chunk_size=chunk_size, chunk_overlap=chunk_overlap
    )
    # The request log (and each ingestion's counts) go to the log file; the terminal shows the
    # progress bar and warnings.
    _setup_logging(settings, stderr_level="WARNING")
    try:
        spec = ChunkSpec(settings.chunk_size, settings.chunk_overlap)
    except PolygError as exc:
        _fail(exc)

    async def work(services: Any) -> Any:
        from polyg.core.ingest.service import IngestService

        service = IngestService(services.ctx, spec)
        target = services.project(None)
        if delete:
            resolved = [str(p.resolve()) for p in paths]
            return await service.delete(target, resolved, [f"{r}/" for r in resolved] + [f"{r}#" for r in resolved]), []
        return await _ingest_files(service, target, find_files(paths, include or ()), author, title)

    try:
        report, failures = asyncio.run(_with_core(settings, work))
    except PolygError as exc:
        _fail(exc)
    print(json.dumps(report.as_dict()))
    for path, error in failures:
        # Most parser messages start with the file already; every line names it once.
        reason = error.message if str(path) in error.message else f"{path}: {error.message}"
        print(f"Error: not ingested: {reason} (code {error.code})", file=sys.stderr)
    if failures:
        print(f"{len(failures)} of the files failed; the others were ingested.", file=sys.stderr)
        raise typer.Exit(2)


async def _ingest_files(
    service: Any, project: str, files: list[Path], authors: list[str] | None, title: str | None
) -> tuple[Any, list[tuple[Path, PolygError]]]:
    """Parse and check every file (a file that cannot be read, or whose documents the ingest
    would refuse, is reported by name and the others go on), then ingest them all with a
    progress bar on stderr."""
    import dataclasses

    from rich.console import Console
    from rich.progress import Progress

    from polyg.core.ingest.parsers import parse_file
    from polyg.core.ingest.service import checked

    documents = []
    failures: list[tuple[Path, PolygError]] = []
    for path in files:
        try:
            parsed = []
            for doc in parse_file(path):
                if authors:
                    doc = dataclasses.replace(doc, authors=tuple(authors))
                if title:
                    doc = dataclasses.replace(doc, title=title)
                parsed.append(checked(doc))
        except PolygError as exc:
            failures.append((path, exc))
            continue
        except OSError as exc:  # unreadable (permissions, a file gone meanwhile)
            failures.append((path, InvalidParams(f"cannot read it: {exc.strerror or exc}.")))
            continue
        documents += parsed
    with Progress(console=Console(stderr=True)) as bar:
        task = bar.add_task(f"ingesting {len(documents)} documents into {project}", total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        report = await service.ingest(project, documents, advance)
    return report, failures


@app.command()
def query(
    text: Annotated[str, typer.Argument(help="The question, e.g. 'Who wrote about GPT-4?'.")],
    limit: Annotated[int | None, typer.Option("--limit", help="Chunks to return (default 5).")] = None,
    project: ProjectOpt = None,
    store: StoreOpt = None,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Answer from the ingested documents: prints graph_retrieve's JSON."""
    import json

    settings = _settings(config, project=project, store=store, data_dir=data_dir, retrieval_limit=limit)
    _setup_logging(settings, stderr_level="WARNING")

    async def work(services: Any) -> Any:
        from polyg.logs import new_request_id, request_id
        from polyg.tools.retrieval import retrieve

        request_id.set(new_request_id())  # the execution trace in the log carries it
        result = await retrieve(services, None, text, settings.retrieval_limit)
        if not result["results"]:
            # No answer from a project that does not exist is a mistyped name, not "nothing
            # found" (asked after the search, so that a failing embedder is reported as such).
            await _existing_project(services)
        return result

    try:
        result = asyncio.run(_with_core(settings, work))
    except PolygError as exc:
        _fail(exc)
    print(json.dumps(result, ensure_ascii=False, indent=2))


def main() -> None:
    app()
