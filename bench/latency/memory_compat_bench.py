"""memory-compat benchmark: polyg against the official MCP memory server, same client, same calls.

Both servers are preloaded with the same generated entities (two sentence observations each)
through their own import paths:

- official (`@modelcontextprotocol/server-memory`, node): its storage *is* a JSONL file, so the
  file is written directly and named by MEMORY_FILE_PATH;
- polyg: `polyg import FILE.jsonl --data-dir D` on that same file, timed (entities/s). Cached.

Then both are spawned over stdio and driven by the same Python MCP client, sequentially (one
request in flight), with the same arguments in the same order: `create_entities` (one new
entity with two observations per call), `search_nodes` (names, last names, observation words,
phrases, and mixed name+word queries), `open_nodes` (1-3 existing names), and `ping` (the SDK
floor of each server). When both servers run at one size they are alive together and the calls
are interleaved (for each round and operation: one server then the other, the order alternating
per round), so the shared machine's noise falls on both alike.

Usage:
    .venv/bin/python bench/latency/memory_compat_bench.py                   # 10k both, then 1k and 100k polyg
    .venv/bin/python bench/latency/memory_compat_bench.py --sizes 10000 --calls 300
    .venv/bin/python bench/latency/memory_compat_bench.py --sizes 1000 --skip-official
    .venv/bin/python bench/latency/memory_compat_bench.py --profile         # + polyg under cProfile at 10k

Results: bench/results/memory-compat-<size>.md and .json (machine info, git commit, every
number behind the tables). Timings are informational: compare ratios from one run.
`memory_compat_bench.py --rerender bench/results/memory-compat-<size>.json` rewrites the .md.

Large stores: `polyg import` embeds every entity and observation (3 texts per entity) with
MiniLM. When the MiniLM import rate measured at a smaller size projects more than
--max-import-s (1200 s) for a size, that size is preloaded with POLYG_EMBEDDING_PROVIDER=hashing
(same 384 dimensions; still through `polyg import`), and the results say so. The server is
always run with the default MiniLM embedder, so query embedding and create costs are real; only
the stored vectors of the preloaded entities are hashing vectors (search relevance differs,
search cost does not).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import IO, Any

SCRIPT = Path(__file__).resolve()
sys.path.insert(0, str(SCRIPT.parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib.database import stop_db  # noqa: E402
from bench.lib.datadirs import fresh_copy  # noqa: E402
from bench.lib.env import clean_env, polyg_executable  # noqa: E402
from bench.lib.machine import LoadSampler, describe_machine, machine_info  # noqa: E402
from bench.lib.paths import REPO  # noqa: E402
from bench.lib.procs import dir_size_mb, find_child, memory_kb  # noqa: E402
from bench.lib.results import write_results  # noqa: E402
from bench.lib.server import McpCalls, PolygServer, server_ms  # noqa: E402
from bench.lib.smoke import smoke_workdir  # noqa: E402
from bench.lib.stats import fmt_mb, fmt_ms, summarize  # noqa: E402

DATA_VERSION = 1  # bump when the generator changes: cached files and data dirs are rebuilt
OFFICIAL_PACKAGE = "@modelcontextprotocol/server-memory"
OFFICIAL_VERSION = "2026.8.31"

# Targets (informational; PASS/MISS printed, nothing fails).
TARGET_SIZE = 10_000
TARGET_SEARCH_P50_MS = 6.0
TARGET_IMPORT_RATE = 150.0  # entities/s through `polyg import`
REFERENCE_OFFICIAL = {"create_entities": 29.0, "search_nodes": 48.0, "open_nodes": 62.0}  # calls/s, issue

TOOL_OPS = ("create_entities", "search_nodes", "open_nodes")
OPS = ("ping", *TOOL_OPS)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- generated data ---------------------------------------------------------------------------

FIRST = (
    "Maria Jonas Aiko Liam Sofia Mateo Amara Noah Elena Ravi Chloe Tomasz Ingrid Kwame Lucia Omar "
    "Hannah Diego Yuki Fatima Oskar Priya Leon Zara Felix Nadia Hugo Mei Arjun Clara Idris Astrid "
    "Bruno Leila Emil Rosa Kenji Alma Viktor Nora"
).split()
LAST = (
    "Okafor Lindqvist Tanaka Moreau Rossi Kowalski Haddad Fernandes Novak Petrov Nguyen Schmidt "
    "Alvarez Mensah Bianchi Johansson Kim Duarte Ivanova OConnor Yilmaz Costa Weber Sato Andersen "
    "Murphy Horvat Silva Dubois Keller Nakamura Popescu Garcia Jensen Lopez Bauer Ito Varga Reyes Sousa"
).split()
CITIES = (
    "Lisbon Porto Berlin Munich Osaka Kyoto Nairobi Accra Toronto Montreal Seattle Austin Denver "
    "Dublin Cork Madrid Valencia Milan Turin Krakow Warsaw Prague Vienna Zurich Oslo Bergen "
    "Helsinki Tallinn Lyon Marseille"
).split()
JOBS = [
    "nurse", "architect", "data engineer", "teacher", "pilot", "chef", "lawyer", "pharmacist",
    "carpenter", "journalist", "translator", "veterinarian", "electrician", "product manager",
    "designer", "accountant", "firefighter", "biologist", "librarian", "surgeon", "economist",
    "photographer", "mechanic", "dentist",
]  # fmt: skip
HOBBIES = [
    "rock climbing", "playing the violin", "chess", "sourdough baking", "trail running", "sailing",
    "birdwatching", "pottery", "salsa dancing", "woodworking", "cycling", "gardening", "photography",
    "kayaking", "knitting", "astronomy", "skiing", "surfing", "board games", "calligraphy",
    "fly fishing", "scuba diving", "origami", "jazz piano", "beekeeping",
]  # fmt: skip
LANGS = "Spanish Japanese German Portuguese Swahili Italian Korean Polish Arabic Dutch Finnish Greek".split()
DRINKS = "espresso green tea matcha oolong rooibos kombucha cortado chai".split()
PETS = "dog cat parrot rabbit tortoise hamster ferret".split()
PET_NAMES = "Biscuit Pepper Mochi Luna Ziggy Olive Pixel Nacho Clover Tofu".split()
FOODS = "peanuts shellfish gluten dairy sesame strawberries eggs soy".split()
TOPICS = [
    "payments", "search", "observability", "security", "onboarding", "billing", "mobile",
    "machine learning", "accessibility", "localization", "data privacy", "infrastructure",
    "growth", "compliance", "recommendations", "fraud detection", "logistics", "analytics",
    "customer support", "identity", "pricing", "notifications", "supply chain", "energy", "healthcare",
]  # fmt: skip
TECH = (
    "Kubernetes Postgres Kafka Redis Terraform React Django Rust Go Spark Airflow Snowflake "
    "GraphQL Elasticsearch RabbitMQ Flutter Swift Kotlin Prometheus Grafana ClickHouse Vault "
    "Ansible Nginx TypeScript"
).split()
ORG_WORDS = (
    "Northwind Bluepeak Ironleaf Brightwater Silverline Redwood Quantum Harbor Summit Evergreen "
    "Cobalt Lumen Meridian Atlas Vertex Orchard Granite Aurora Pioneer Beacon"
).split()
ORG_SUFFIX = "Labs Systems Logistics Health Bank Foods Energy Studios Robotics Analytics".split()
CODENAMES = (
    "Falcon Heron Kestrel Osprey Phoenix Griffin Orion Vega Lyra Nova Comet Tundra Mistral "
    "Sirocco Monsoon Glacier Basalt Quartz Juniper Cedar"
).split()
EVENT_KINDS = "Summit Offsite Hackathon Workshop Meetup Conference Retreat Kickoff".split()
TOOL_WORDS = "Deploybot Ledgerly Tracehound Shipyard Pagewatch Querysmith Flagpole Dockhand".split()
SYSTEMS = "checkout inventory auth ledger catalog scheduler reporting messaging".split()
RISKS = [
    "vendor lock-in", "data loss during cutover", "slow approvals", "missing test coverage",
    "budget overrun", "key person dependency", "latency regressions", "unclear ownership",
]  # fmt: skip
INDUSTRIES = "retail banking insurance agriculture aviation telecom gaming education".split()
PRODUCTS = "analytics dashboards payment terminals delivery drones booking software sensors".split()
PROG_LANGS = "Python Go Rust Java Ruby Elixir".split()
TASKS = "release notes invoice matching log rotation access reviews cost reports".split()
MONTHS = "January February March April May June July August September October November December".split()

TYPE_WEIGHTS = (("person", 50), ("organization", 15), ("project", 15), ("event", 10), ("tool", 10))
_TYPE_TABLE = [t for t, w in TYPE_WEIGHTS for _ in range(w)]

TEMPLATES: dict[str, list[str]] = {
    "person": [
        "{first} lives in {city} and works as a {job}.",
        "Joined {org} in {year} to lead the {topic} team.",
        "Enjoys {hobby} on weekends and is learning {lang}.",
        "Prefers {drink} over coffee and has a {pet} called {petname}.",
        "Met {other} at the {topic} conference in {city}.",
        "Is allergic to {food} and avoids it at team dinners.",
        "Moved from {city} to {city2} in {year} for a new role at {org}.",
        "Mentors junior engineers on {tech} and {tech2}.",
    ],
    "organization": [
        "Headquartered in {city}, the company builds {product} for {industry} clients.",
        "Founded in {year} by {other}, it employs about {num} people.",
        "Uses {tech} and {tech2} across its {topic} platform.",
        "Opened a second office in {city2} to serve the {industry} market.",
        "Signed a partnership with {org} on {topic} research.",
    ],
    "project": [
        "The project migrates the {system} service from {tech} to {tech2}.",
        "Led by {other}, the project ships its first release in {month} {year}.",
        "Its main risk is {risk}, reviewed weekly with {org}.",
        "The team in {city} owns the {topic} roadmap for this project.",
        "Depends on the {system} API and a {tech} cluster.",
    ],
    "event": [
        "Took place in {city} in {month} {year} with about {num} attendees.",
        "The keynote by {other} covered {topic} and {topic2}.",
        "Sponsored by {org}; the workshop track focused on {tech}.",
        "Notes from the {topic} panel mention {risk}.",
    ],
    "tool": [
        "An internal tool written in {prog} that automates {task}.",
        "Maintained by {other}; it replaced {tech} in {year}.",
        "Runs nightly in the {city} data center and reports to the {topic} dashboard.",
        "Known issue: {risk} when the {system} queue is full.",
    ],
}


def generated_entity(i: int) -> dict[str, Any]:
    """Entity i (deterministic): `{name, entityType, observations}` with two distinct sentences."""
    r = random.Random(f"memory-compat/{DATA_VERSION}/{i}")
    type_ = r.choice(_TYPE_TABLE)
    first, last, city = r.choice(FIRST), r.choice(LAST), r.choice(CITIES)
    if type_ == "person":
        name = f"{first} {i} {last}"
    elif type_ == "organization":
        name = f"{r.choice(ORG_WORDS)} {i} {r.choice(ORG_SUFFIX)}"
    elif type_ == "project":
        name = f"Project {i} {r.choice(CODENAMES)}"
    elif type_ == "event":
        name = f"{r.choice(EVENT_KINDS)} {i} {city}"
    else:
        name = f"{r.choice(TOOL_WORDS)} {i}"
    org = f"{r.choice(ORG_WORDS)} {r.choice(ORG_SUFFIX)}"
    tech, tech2 = r.sample(TECH, 2)
    topic, topic2 = r.sample(TOPICS, 2)
    words = {
        "first": first,
        "city": city,
        "city2": r.choice([c for c in CITIES if c != city]),
        "job": r.choice(JOBS),
        "org": org,
        "year": r.randint(2009, 2026),
        "topic": topic,
        "topic2": topic2,
        "hobby": r.choice(HOBBIES),
        "lang": r.choice(LANGS),
        "drink": r.choice(DRINKS),
        "pet": r.choice(PETS),
        "petname": r.choice(PET_NAMES),
        "other": f"{r.choice(FIRST)} {r.choice(LAST)}",
        "food": r.choice(FOODS),
        "tech": tech,
        "tech2": tech2,
        "product": r.choice(PRODUCTS),
        "industry": r.choice(INDUSTRIES),
        "num": r.choice((12, 40, 85, 150, 300, 1200, 5000)),
        "system": r.choice(SYSTEMS),
        "month": r.choice(MONTHS),
        "risk": r.choice(RISKS),
        "prog": r.choice(PROG_LANGS),
        "task": r.choice(TASKS),
    }
    templates = r.sample(TEMPLATES[type_], 2)
    return {"name": name, "entityType": type_, "observations": [t.format(**words) for t in templates]}


def write_jsonl(path: Path, n: int) -> None:
    """The official server's own storage format (its saveGraph writes exactly these lines)."""
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        lines = (json.dumps({"type": "entity", **generated_entity(i)}, ensure_ascii=False) for i in range(n))
        f.write("\n".join(lines))
    tmp.replace(path)


_PLAIN = re.compile(r"^[A-Za-z0-9]+$")


def make_workload(n: int, total: int, seed: int) -> dict[str, list[Any]]:
    """The same arguments for both servers, in order: `total` calls of each tool."""
    r = random.Random(seed)
    creates = [generated_entity(n + k) for k in range(total)]  # new names: indices past the store
    kinds = ("name", "last name", "word", "phrase", "name+word")
    searches: list[dict[str, str]] = []
    for k in range(total):
        kind = kinds[k % len(kinds)]
        e = generated_entity(r.randrange(n))
        if kind == "name":
            q = e["name"]
        elif kind == "last name":
            q = r.choice(LAST)
        elif kind == "word":
            q = r.choice([r.choice(CITIES), r.choice(HOBBIES).split()[-1], r.choice(TECH), r.choice(TOPICS)])
        elif kind == "phrase":
            # 2-3 consecutive plain words of a stored observation: a substring the official
            # server can match as written.
            tokens = r.choice(e["observations"]).split()
            width = r.choice((2, 3))
            windows = [
                tokens[s : s + width]
                for s in range(len(tokens) - width + 1)
                if all(_PLAIN.match(t) for t in tokens[s : s + width])
            ]
            q = " ".join(r.choice(windows)) if windows else tokens[0]
        else:
            q = f"{r.choice(LAST)} {r.choice(CITIES)}"
        searches.append({"kind": kind, "query": q})
    opens = [[generated_entity(j)["name"] for j in r.sample(range(n), r.randint(1, 3))] for _ in range(total)]
    return {"create_entities": creates, "search_nodes": searches, "open_nodes": opens}


# --- cached preloads --------------------------------------------------------------------------


def ensure_jsonl(workdir: Path, n: int) -> Path:
    d = workdir / f"mc-{n}"
    d.mkdir(parents=True, exist_ok=True)
    path, meta = d / "memory.jsonl", d / "memory.meta.json"
    want = {"version": DATA_VERSION, "entities": n}
    if path.exists() and meta.exists() and json.loads(meta.read_text()) == want:
        return path
    t = time.perf_counter()
    write_jsonl(path, n)
    meta.write_text(json.dumps(want) + "\n")
    log(f"wrote {path} ({n} entities, {path.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - t:.1f} s")
    return path


def polyg_import(jsonl: Path, data_dir: Path, env: dict[str, str], log_path: Path) -> dict[str, Any]:
    """`polyg import FILE --data-dir D`, timed from spawn to exit (includes start-up and model load)."""

    cmd = [polyg_executable(), "import", str(jsonl), "--data-dir", str(data_dir)]
    t = time.perf_counter()
    with log_path.open("w") as out:
        proc = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, check=False, cwd=REPO)
    wall = time.perf_counter() - t
    text = log_path.read_text(errors="replace")
    if proc.returncode != 0:
        stop_db(data_dir)
        raise RuntimeError(f"polyg import failed ({proc.returncode}):\n{text[-4000:]}")
    m = re.search(r"created (\d+) entities, (\d+) relations; added (\d+) observations; skipped (\d+)", text)
    created = int(m.group(1)) if m else None
    return {"wall_s": round(wall, 2), "entities_created": created, "summary": m.group(0) if m else text[-300:]}


def ensure_polyg_preloaded(
    workdir: Path, n: int, jsonl: Path, provider: str, env: dict[str, str]
) -> tuple[Path, dict[str, Any]]:

    pristine = workdir / f"mc-{n}" / f"polyg-{provider}" / "pristine"
    meta_path = pristine.parent / "pristine.meta.json"
    if meta_path.exists() and pristine.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("version") == DATA_VERSION and meta.get("entities") == n:
            meta["cached"] = True
            return pristine, meta
    if pristine.exists():
        stop_db(pristine)
        shutil.rmtree(pristine)
    pristine.parent.mkdir(parents=True, exist_ok=True)
    extra = {} if provider == "minilm" else {"POLYG_EMBEDDING_PROVIDER": provider}
    log(f"polyg import of {n} entities ({provider} embeddings) into {pristine} ...")
    result = polyg_import(jsonl, pristine, {**env, **extra}, pristine.parent / "import.log")
    stop_db(pristine)
    rate = n / result["wall_s"]
    meta = {
        "version": DATA_VERSION,
        "entities": n,
        "observations": 2 * n,
        "texts_embedded": 3 * n,
        "provider": provider,
        "import": result,
        "entities_per_s": round(rate, 1),
        "imported_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "data_dir_mb": dir_size_mb(pristine),
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
    }
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    log(f"imported {n} entities in {result['wall_s']} s: {rate:.1f} entities/s ({provider})")
    meta["cached"] = False
    return pristine, meta


def known_minilm_rate(workdir: Path) -> tuple[int, float] | None:
    """(size, entities/s) of the largest MiniLM import measured so far (cached meta files)."""
    best = None
    for meta_path in workdir.glob("mc-*/polyg-minilm/pristine.meta.json"):
        with contextlib.suppress(ValueError, KeyError, OSError):
            meta = json.loads(meta_path.read_text())
            if meta.get("version") == DATA_VERSION and (best is None or meta["entities"] > best[0]):
                best = (meta["entities"], meta["entities_per_s"])
    return best


def choose_provider(args: argparse.Namespace, n: int) -> tuple[str, str]:
    """minilm unless the measured MiniLM import rate projects more than --max-import-s."""
    if args.big_embed != "auto":
        return args.big_embed, f"forced by --big-embed {args.big_embed}"
    cached = args.workdir / f"mc-{n}" / "polyg-minilm" / "pristine.meta.json"
    if cached.exists():
        return "minilm", "MiniLM import cached"
    known = known_minilm_rate(args.workdir)
    if known is None:
        if n <= 10_000:
            return "minilm", "no rate measured yet; size small enough"
        # Measure at 10k first (it is a size the benchmark wants anyway).
        ensure_polyg_preloaded(args.workdir, 10_000, ensure_jsonl(args.workdir, 10_000), "minilm", args.env)
        known = known_minilm_rate(args.workdir)
        assert known is not None
    size, rate = known
    projected = n / rate
    if projected > args.max_import_s:
        return "hashing", (
            f"MiniLM import measured at {rate:.0f} entities/s ({size:,} entities) projects "
            f"{projected / 60:.0f} min for {n:,} > {args.max_import_s / 60:.0f} min"
        )
    return "minilm", f"MiniLM projected {projected:.0f} s at {rate:.0f} entities/s"


# --- the official server ------------------------------------------------------------------------


def official_entry(official_dir: Path) -> Path:
    return official_dir / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"


def ensure_official(official_dir: Path, version: str) -> dict[str, str]:
    """npm install the official server (with its dependencies) into official_dir, once."""
    entry = official_entry(official_dir)
    pkg_json = entry.parent.parent / "package.json"
    if not entry.exists() or json.loads(pkg_json.read_text()).get("version") != version:
        official_dir.mkdir(parents=True, exist_ok=True)
        if not (official_dir / "package.json").exists():
            (official_dir / "package.json").write_text('{"name": "polyg-bench-official", "private": true}\n')
        log(f"npm install {OFFICIAL_PACKAGE}@{version} in {official_dir} ...")
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", f"{OFFICIAL_PACKAGE}@{version}"],
            cwd=official_dir,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    node = shutil.which("node") or "node"
    node_v = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    sdk = entry.parent.parent.parent / "sdk" / "package.json"
    sdk_v = json.loads(sdk.read_text()).get("version", "?") if sdk.exists() else "?"
    return {
        "package": OFFICIAL_PACKAGE,
        "version": json.loads(pkg_json.read_text()).get("version", "?"),
        "sdk": sdk_v,
        "node": node_v,
        "entry": str(entry),
    }


class StdioServer(McpCalls):
    """Any MCP server spawned over stdio and driven by the MCP Python client (the same
    transport PolygServer uses), stderr to a log file."""

    def __init__(self, command: list[str], *, env: dict[str, str], log_path: Path, match: str) -> None:
        self.command, self.env, self.log_path, self.match = command, env, log_path, match
        self.client: Any = None
        self.pid: int | None = None
        self.t_spawn = 0.0
        self.init_s = float("nan")
        self._stack: AsyncExitStack | None = None
        self._errlog: IO[str] | None = None

    async def __aenter__(self) -> StdioServer:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=self.command[0], args=self.command[1:], env=self.env)
        self._errlog = self.log_path.open("a")
        stack = AsyncExitStack()
        self.t_spawn = time.perf_counter()
        try:
            client = Client(
                stdio_client(params, errlog=self._errlog), mode="legacy", cache=None, read_timeout_seconds=600.0
            )
            self.client = await stack.enter_async_context(client)
            self.init_s = time.perf_counter() - self.t_spawn
        except BaseException:
            await stack.aclose()
            self._errlog.close()
            raise
        self._stack = stack
        self.pid = find_child(self.match)
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._stack is not None:
                await self._stack.aclose()
        finally:
            if self._errlog is not None:
                self._errlog.close()

    def memory(self) -> dict[str, Any]:

        return {"server": memory_kb(self.pid)} if self.pid else {}


# --- measuring ------------------------------------------------------------------------------------


def _count(result: Any) -> int:
    sc = getattr(result, "structured_content", None)
    if isinstance(sc, dict) and isinstance(sc.get("entities"), list):
        return len(sc["entities"])
    return -1


def _size(result: Any) -> int:
    return sum(len(getattr(c, "text", "") or "") for c in (result.content or []))


async def drive(
    servers: dict[str, Any], workload: dict[str, list[Any]], calls: int, warmup: int
) -> dict[str, dict[str, Any]]:
    """Warm up, then `calls` rounds: each op (order rotating), on each server (order alternating)."""

    names = list(servers)
    samples = {s: {op: [] for op in OPS} for s in names}
    counts = {s: {op: [] for op in TOOL_OPS} for s in names}
    sizes = {s: {op: [] for op in TOOL_OPS} for s in names}
    search_by_kind: dict[str, dict[str, list[float]]] = {s: {} for s in names}
    inside: dict[str, dict[str, list[float]]] = {s: {} for s in names}  # server-side ms, from _meta

    async def one(server: Any, op: str, k: int) -> Any:
        if op == "ping":
            return await server.ping()
        if op == "create_entities":
            return await server.call(op, {"entities": [workload[op][k]]})
        if op == "search_nodes":
            return await server.call(op, {"query": workload[op][k]["query"]})
        return await server.call(op, {"names": workload[op][k]})

    # Warm-up uses the workload's tail (its own create names), measured rounds the head.
    for w in range(warmup):
        for op in OPS:
            for s in names:
                await one(servers[s], op, calls + w)
    t0 = time.perf_counter()
    for i in range(calls):
        order = names if i % 2 == 0 else names[::-1]
        for j in range(len(OPS)):
            op = OPS[(i + j) % len(OPS)]
            for s in order:
                t = time.perf_counter()
                result = await one(servers[s], op, i)
                samples[s][op].append(time.perf_counter() - t)
                if op != "ping":
                    if (ms := server_ms(result)) is not None:
                        inside[s].setdefault(op, []).append(ms)
                    counts[s][op].append(_count(result))
                    sizes[s][op].append(_size(result))
                if op == "search_nodes":
                    kind = workload[op][i]["kind"]
                    search_by_kind[s].setdefault(kind, []).append(samples[s][op][-1])
    loop_s = time.perf_counter() - t0
    return {
        s: {
            "samples": samples[s],
            "counts": counts[s],
            "sizes": sizes[s],
            "search_by_kind": search_by_kind[s],
            "server_ms": inside[s],
            "loop_s": loop_s,
        }
        for s in names
    }


async def wait_until_ok(server: Any, tool: str, arguments: dict[str, Any], limit_s: float) -> dict[str, Any]:
    """Call `tool` until it answers without an error; time from spawn to that answer.

    polyg answers `initialize` at once and opens its store in the background; two gaps follow
    a restart, both measured here and waited for so that the benchmark measures a usable store:
    - store loading: while FalkorDB loads its files (minutes at 100k entities) a call can
      fail with "Cannot reach FalkorDB ... Timeout reading";
    - index construction: FalkorDB then rebuilds its indexes in the background ("UNDER
      CONSTRUCTION" in db.indexes()); until the vector index of :Observation is operational,
      search_nodes fails with "Invalid arguments for procedure 'db.idx.vector.queryNodes'".
    """
    first_error = None
    errors = 0
    deadline = time.perf_counter() + limit_s
    while True:
        try:
            result = await server.client.call_tool(tool, arguments)
            error = (result.content[0].text if result.content else "?") if result.is_error else None
        except Exception as exc:  # a transport-level timeout: keep waiting, within limit_s
            error = f"{type(exc).__name__}: {exc}"
        if error is None:
            break
        errors += 1
        first_error = first_error or error
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{tool} still failing after {limit_s:.0f} s: {first_error}")
        await asyncio.sleep(0.5)
    ready = time.perf_counter() - server.t_spawn
    if errors:
        log(f"{tool} failed for {ready:.1f} s after spawn ({errors} calls): {first_error[:200]}")
    return {"ready_s": ready, "errors_before_ready": errors, "first_error": first_error}


def _mean(values: list[int]) -> float:
    return round(sum(values) / len(values), 1) if values else float("nan")


async def session(args: argparse.Namespace, n: int, run_official: bool, polyg_dir: Path) -> dict[str, Any]:

    size_dir = args.workdir / f"mc-{n}"
    seed = args.seed + n
    workload = make_workload(n, args.calls + args.warmup, seed)
    out: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        servers: dict[str, Any] = {}
        if run_official:
            run_file = size_dir / "official-run" / "memory.jsonl"
            run_file.parent.mkdir(exist_ok=True)
            shutil.copyfile(ensure_jsonl(args.workdir, n), run_file)
            olog = size_dir / "official-server.log"
            olog.write_text("")
            official = StdioServer(
                ["node", args.official_info["entry"]],
                env={**os.environ, "MEMORY_FILE_PATH": str(run_file)},
                log_path=olog,
                match="server-memory",
            )
            await stack.enter_async_context(official)
            probe = generated_entity(n // 2)["name"]
            await official.call("open_nodes", {"names": [probe]})
            out["official"] = {"init_s": official.init_s, "ready_s": time.perf_counter() - official.t_spawn}
            servers["official"] = official
        plog = size_dir / "polyg-server.log"
        plog.write_text("")
        command = None
        if args.profile_run:
            command = [sys.executable, str(SCRIPT), "_cprofile", str(args.profile_run)]
        polyg = PolygServer(
            polyg_dir, log_path=plog, env=args.env, command=command, extra_args=["--toolsets", "memory-compat"]
        )
        await stack.enter_async_context(polyg)
        # Store loaded and model ready, then indexes operational (see wait_until_ok).
        probe = {"names": [generated_entity(n // 2)["name"]]}
        opened = await wait_until_ok(polyg, "open_nodes", probe, args.search_wait_s)
        searched = await wait_until_ok(polyg, "search_nodes", {"query": "availability probe"}, args.search_wait_s)
        out["polyg"] = {
            "init_s": polyg.init_s,
            "ready_s": opened["ready_s"],
            "open_errors_before_ready": opened["errors_before_ready"],
            "open_error": opened["first_error"],
            "search_ready_s": searched["ready_s"],
            "search_errors_before_ready": searched["errors_before_ready"],
            "search_error": searched["first_error"],
        }
        servers["polyg"] = polyg
        log(
            f"n={n}: ready ({', '.join(f'{s} {out[s]["ready_s"]:.2f} s' for s in servers)}); "
            f"{args.calls} calls x {len(OPS)} ops x {len(servers)} servers after {args.warmup} warm-up rounds"
        )
        with LoadSampler() as sampler:
            raw = await drive(servers, workload, args.calls, args.warmup)
        for s, srv in servers.items():
            r = raw[s]
            out[s]["stats"] = {op: summarize(v) for op, v in r["samples"].items()}
            out[s]["entities_returned_mean"] = {op: _mean(v) for op, v in r["counts"].items()}
            out[s]["response_chars_mean"] = {op: _mean(v) for op, v in r["sizes"].items()}
            out[s]["search_by_kind"] = {k: summarize(v) for k, v in r["search_by_kind"].items()}
            out[s]["memory"] = srv.memory()
            out[s]["loop_s"] = r["loop_s"]
        # Sanity: every create was real (both servers skip existing names).
        for s, srv in servers.items():
            made = workload["create_entities"][0]["name"]
            got = await srv.call("open_nodes", {"names": [made]})
            out[s]["create_check"] = _count(got) == 1
        inside = raw["polyg"]["server_ms"]
        out["polyg"]["server_side"] = {op: summarize([x / 1000 for x in v]) for op, v in inside.items()}
        out["machine_load"] = sampler.summary()
        if "official" in servers:
            out["official"]["file_mb_after"] = round(run_file.stat().st_size / 1e6, 2)
    out["polyg"]["leftover_db"] = polyg.leftover_db
    return out


async def bench_size(args: argparse.Namespace, n: int) -> dict[str, Any]:

    jsonl = ensure_jsonl(args.workdir, n)
    provider, why = choose_provider(args, n)
    pristine, meta = ensure_polyg_preloaded(args.workdir, n, jsonl, provider, args.env)
    run_dir = args.workdir / f"mc-{n}" / "polyg-run"
    t = time.perf_counter()
    fresh_copy(pristine, run_dir)
    copy_s = time.perf_counter() - t
    run_official = not args.skip_official and n in args.official_sizes
    try:
        result = await session(args, n, run_official, run_dir)
    finally:
        stop_db(run_dir)
    result.update(
        entities=n,
        official_ran=run_official,
        jsonl_mb=round(jsonl.stat().st_size / 1e6, 2),
        polyg_preload=meta,
        polyg_preload_provider_reason=why,
        copy_s=round(copy_s, 2),
    )
    for s in ("official", "polyg"):
        if s in result:
            for op in OPS:
                st = result[s]["stats"][op]
                log(
                    f"n={n} {s:8s} {op:16s} {st['calls_per_s']:7.1f}/s  "
                    f"p50 {st['p50_ms']:7.2f} ms  p95 {st['p95_ms']:7.2f} ms"
                )
    return result


# --- profiling -------------------------------------------------------------------------------------


def _cprofile_main(argv: list[str]) -> None:
    """`memory_compat_bench.py _cprofile OUT.prof serve ...`: polyg's CLI under cProfile (main
    thread only: embedding runs in worker threads and shows as time awaiting them)."""
    import cProfile

    out = argv[0]
    sys.argv = ["polyg", *argv[1:]]
    from polyg.cli import main as polyg_main

    prof = cProfile.Profile()
    prof.enable()
    try:
        polyg_main()
    except (SystemExit, KeyboardInterrupt):
        pass
    finally:
        prof.disable()
        prof.dump_stats(out)


def profile_report(prof_path: Path, top: int = 30) -> str:
    import io
    import pstats

    buf = io.StringIO()
    stats = pstats.Stats(str(prof_path), stream=buf)
    stats.strip_dirs().sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return buf.getvalue()


# --- report ------------------------------------------------------------------------------------------


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


def targets(results: list[dict[str, Any]]) -> list[dict[str, str]]:

    out = []
    at = next((r for r in results if r["entities"] == TARGET_SIZE), None)
    both = at if at and at.get("official_ran") else None
    for op in TOOL_OPS:
        if both:
            p, o = both["polyg"]["stats"][op], both["official"]["stats"][op]
            ratio = p["calls_per_s"] / o["calls_per_s"]
            value = (
                f"polyg {p['calls_per_s']:.0f}/s vs official {o['calls_per_s']:.0f}/s ({ratio:.2f}x); "
                f"p50 {fmt_ms(p['p50_ms'])} vs {fmt_ms(o['p50_ms'])} ms"
            )
            ok: bool | None = ratio > 1 and p["p50_ms"] < o["p50_ms"]
        else:
            value, ok = "not measured", None
        out.append(
            {"target": f"{op} at {TARGET_SIZE:,}: polyg faster than official", "value": value, "verdict": verdict(ok)}
        )
    p50 = at["polyg"]["stats"]["search_nodes"]["p50_ms"] if at else None
    out.append(
        {
            "target": f"search_nodes p50 at {TARGET_SIZE:,} <= {TARGET_SEARCH_P50_MS} ms (polyg)",
            "value": f"{p50:.2f} ms" if p50 is not None else "not measured",
            "verdict": verdict(None if p50 is None else p50 <= TARGET_SEARCH_P50_MS),
        }
    )
    pre = at["polyg_preload"] if at else None
    if pre:
        value = f"{pre['entities_per_s']:.0f} entities/s ({pre['provider']})"
        ok = pre["entities_per_s"] >= TARGET_IMPORT_RATE if pre["provider"] == "minilm" else None
    else:
        value, ok = "not measured", None
    out.append(
        {
            "target": f"`polyg import` >= {TARGET_IMPORT_RATE:.0f} entities/s ({TARGET_SIZE:,}, MiniLM)",
            "value": value,
            "verdict": verdict(ok),
        }
    )
    return out


def search_ready(server: dict[str, Any]) -> str:
    if "search_ready_s" not in server:
        return "-"
    errors = server.get("search_errors_before_ready", 0)
    return f"{server['search_ready_s']:.2f}" + (f" ({errors} failed before)" if errors else "")


def first_call(server: dict[str, Any]) -> str:
    errors = server.get("open_errors_before_ready", 0)
    return f"{server['ready_s']:.2f}" + (f" ({errors} failed before)" if errors else "")


def render(data: dict[str, Any]) -> str:

    m, results, cfg = data["machine"], data["results"], data["config"]
    off = data.get("official")
    lines = [
        f"# memory-compat benchmark: polyg vs the official MCP memory server, {m['date']}",
        "",
        describe_machine(m)
        + (f" Official: {off['package']} {off['version']} (TS SDK {off['sdk']}), node {off['node']}." if off else ""),
        "",
        f"Both servers over stdio, driven by the same MCP Python client (`legacy` handshake), sequential calls. "
        f"{cfg['calls']} measured calls per operation after {cfg['warmup']} warm-up rounds; operations "
        "interleaved round-robin and, where both servers ran, alternating between them call by call. "
        "Same generated data for both: entities of 5 types (half of them people, names like "
        "`Maria 123 Okafor`), two sentence observations each; `create_entities` makes one new entity "
        "(two observations) per call; `search_nodes` queries are a fifth each full names, last names, "
        "single observation words, 2-3 word phrases from observations, and last name + city; "
        "`open_nodes` asks for 1-3 existing names. polyg: embedded FalkorDB, default MiniLM embedder. "
        "Shared, noisy machine: read medians and same-run ratios.",
        "",
        "## Tool calls",
        "",
        "| entities | operation | server | calls/s | p50 ms | p95 ms | polyg/official calls/s | "
        "in polyg p50 ms | entities returned (mean) | response chars (mean) |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        for op in OPS:
            for s in ("official", "polyg"):
                if s not in r:
                    continue
                st = r[s]["stats"][op]
                ratio = "-"
                if s == "polyg" and "official" in r:
                    ratio = f"**{st['calls_per_s'] / r['official']['stats'][op]['calls_per_s']:.2f}x**"
                inside = r[s].get("server_side", {}).get(op)
                label = f"{op} (SDK floor)" if op == "ping" else op
                lines.append(
                    f"| {r['entities']:,} | {label} | {s} | {st['calls_per_s']:.0f} | {fmt_ms(st['p50_ms'])} | "
                    f"{fmt_ms(st['p95_ms'])} | {ratio} | {fmt_ms(inside['p50_ms']) if inside else '-'} | "
                    f"{r[s].get('entities_returned_mean', {}).get(op, '-')} | "
                    f"{r[s].get('response_chars_mean', {}).get(op, '-')} |"
                )
    lines += [
        "",
        "polyg/official > 1: polyg is faster. 'in polyg' is the handler time polyg reports in each result's `_meta` "
        "(validation, store, embedding), without the MCP transport. The official server returns every "
        "match of `search_nodes` (substring match of the whole query, no ranking, no limit); polyg returns "
        "the 10 best (hybrid ranking).",
        "",
        "### search_nodes p50 by query kind (ms)",
        "",
        "| entities | server | " + " | ".join(("name", "last name", "word", "phrase", "name+word")) + " |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        for s in ("official", "polyg"):
            if s in r:
                kinds = r[s]["search_by_kind"]
                cells = [
                    fmt_ms(kinds[k]["p50_ms"]) if k in kinds else "-"
                    for k in ("name", "last name", "word", "phrase", "name+word")
                ]
                lines.append(f"| {r['entities']:,} | {s} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Preload",
        "",
        "| entities | official: JSONL written directly, MB | `polyg import` wall s | entities/s | "
        "embeddings at import | data dir MB | 1-min load average after import | note |",
        "|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in results:
        p = r["polyg_preload"]
        emb = "MiniLM (default)" if p["provider"] == "minilm" else f"**{p['provider']}** (POLYG_EMBEDDING_PROVIDER)"
        note = r["polyg_preload_provider_reason"]
        if p.get("cached"):
            note += f"; import measured {p['imported_at']} (cached data dir)"
        lines.append(
            f"| {r['entities']:,} | {r['jsonl_mb']} | {p['import']['wall_s']} | "
            f"**{p['entities_per_s']:.0f}** | {emb} | "
            f"{p['data_dir_mb']} | {p.get('loadavg_after', ['?'])[0]} | {note} |"
        )
    lines += [
        "",
        "`polyg import` wall time is process start to exit: start-up, model load, embedding of 3 texts per "
        "entity (the entity and its two observations), writes. Where the preload used hashing vectors, "
        "the server still ran with MiniLM (query embedding and creates are real; stored vectors differ).",
        "",
        "## Startup and memory",
        "",
        "| entities | server | initialize answered s | first call answered s | first search_nodes without error s | "
        "peak RSS MB | FalkorDB peak RSS MB |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        for s in ("official", "polyg"):
            if s in r:
                mem = r[s].get("memory", {})
                db = mem.get("db", {})
                peak = fmt_mb(mem.get("server", {}).get("peak_rss_kb", 0))
                lines.append(
                    f"| {r['entities']:,} | {s} | {r[s]['init_s']:.2f} | {first_call(r[s])} | "
                    f"{search_ready(r[s])} | {peak} | {fmt_mb(db['peak_rss_kb']) if db else '-'} |"
                )
    lines += [
        "",
        "First call: `open_nodes`, retried while it fails (polyg: while FalkorDB loads its files a call "
        "can fail with \"Cannot reach FalkorDB ... Timeout reading\"). 'first search_nodes without error': "
        "when the database replayed its log of commands, FalkorDB then builds the indexes in the background, "
        "and until they are operational polyg's search_nodes refuses (\"The search indexes ... are being "
        'rebuilt"); a store compacted at its last clean stop has them built when it answers. '
        "The benchmark waits for both before measuring.",
        "",
        "## Machine load while measuring",
        "",
        "| entities | 1-min load average, median (max) | CPU busy, median (max) |",
        "|---:|---:|---:|",
    ]
    for r in results:
        la, busy = r["machine_load"].get("load1", {}), r["machine_load"].get("cpu_busy", {})
        if la and busy:
            lines.append(
                f"| {r['entities']:,} | {la['median']:.2f} ({la['max']:.2f}) | "
                f"{busy['median']:.0%} ({busy['max']:.0%}) |"
            )
    lines += ["", "## Targets (informational)", "", "| target | measured | |", "|---|---|---|"]
    for t in data["targets"]:
        lines.append(f"| {t['target']} | {t['value']} | {t['verdict']} |")
    ref = ", ".join(f"{op} {v:.0f}/s" for op, v in REFERENCE_OFFICIAL.items())
    lines += ["", f"Issue's earlier measurement of the official server at 10k: {ref}.", ""]
    if data.get("profile"):
        lines += [
            "## polyg server profile",
            "",
            f"cProfile of `polyg serve` (main thread) over a separate polyg-only session at "
            f"{data['profile']['entities']:,} entities: `{data['profile']['path']}` "
            f"(top functions in `{data['profile']['report']}`).",
            "",
        ]
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict[str, Any]:

    args.workdir.mkdir(parents=True, exist_ok=True)
    args.env = clean_env(args.workdir)
    args.profile_run = None
    machine = machine_info()
    official = None
    if not args.skip_official and any(n in args.official_sizes for n in args.sizes):
        official = ensure_official(args.official_dir, args.official_version)
        args.official_info = official
    results = []
    for n in args.sizes:
        results.append(await bench_size(args, n))
    data: dict[str, Any] = {
        "benchmark": "memory-compat",
        "machine": machine,
        "official": official,
        "config": {
            "sizes": args.sizes,
            "official_sizes": [] if args.skip_official else args.official_sizes,
            "calls": args.calls,
            "warmup": args.warmup,
            "seed": args.seed,
            "max_import_s": args.max_import_s,
            "workdir": str(args.workdir),
            "loadavg_at_end": list(os.getloadavg()),
        },
        "results": results,
    }
    if args.profile:
        n = TARGET_SIZE if TARGET_SIZE in args.sizes else args.sizes[0]
        prof = args.workdir / f"mc-{n}" / "polyg-server.prof"
        args.profile_run = prof
        log(f"profiling polyg at {n} entities (cProfile) ...")
        run_dir = args.workdir / f"mc-{n}" / "polyg-run"
        pristine = next(args.workdir.glob(f"mc-{n}/polyg-*/pristine"))
        fresh_copy(pristine, run_dir)
        try:
            profiled = await session(args, n, False, run_dir)
        finally:
            stop_db(run_dir)
        report = prof.with_suffix(".txt")
        report.write_text(profile_report(prof))
        data["profile"] = {
            "entities": n,
            "path": str(prof),
            "report": str(report),
            "stats_under_profiler": profiled["polyg"]["stats"],
        }
    data["targets"] = targets(results)
    return data


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10000,1000,100000", help="store sizes (entities), run in this order")
    p.add_argument("--official-sizes", default="10000", help="sizes at which the official server runs too")
    p.add_argument("--skip-official", action="store_true", help="polyg only")
    p.add_argument("--calls", type=int, default=300, help="measured calls per operation")
    p.add_argument("--warmup", type=int, default=20, help="warm-up rounds before measuring")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/polyg-bench"), help="cache of preloaded data")
    p.add_argument("--official-dir", type=Path, default=None, help="npm install dir (default WORKDIR/official)")
    p.add_argument("--official-version", default=OFFICIAL_VERSION)
    p.add_argument("--max-import-s", type=float, default=1200.0, help="MiniLM import budget per size")
    p.add_argument(
        "--big-embed",
        choices=("auto", "minilm", "hashing"),
        default="auto",
        help="preload embeddings: auto = MiniLM unless projected over --max-import-s, then hashing",
    )
    p.add_argument(
        "--search-wait-s", type=float, default=1800.0, help="how long to wait for polyg's indexes after start"
    )
    p.add_argument("--profile", action="store_true", help="also run polyg at 10k under cProfile")
    p.add_argument("--seed", type=int, default=20261122)
    p.add_argument("--no-save", action="store_true", help="print only; do not write bench/results")
    p.add_argument("--smoke", action="store_true", help="tiny sizes, seconds, polyg only (nothing saved)")
    args = p.parse_args(argv)
    if args.smoke:
        args.sizes, args.calls, args.warmup, args.big_embed = "30", 3, 1, "hashing"
        args.skip_official, args.no_save, args.workdir = True, True, smoke_workdir("memory-compat")
    args.sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    args.official_sizes = [int(s.replace("_", "")) for s in args.official_sizes.split(",") if s.strip()]
    args.workdir = args.workdir.resolve()
    args.official_dir = (args.official_dir or args.workdir / "official").resolve()
    if args.calls + args.warmup < 1:
        p.error("--calls + --warmup must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_cprofile"]:
        _cprofile_main(argv[1:])
        return 0
    if argv[:1] == ["--rerender"]:  # regenerate a results .md from its .json (same numbers)
        js = Path(argv[1])
        js.with_suffix(".md").write_text(render(json.loads(js.read_text())))
        print(js.with_suffix(".md").read_text())
        return 0
    args = parse_args(argv)

    data = asyncio.run(run(args))
    markdown = render(data)
    print(markdown)
    if not args.no_save:
        for result in data["results"]:
            md, js = write_results(
                "memory-compat",
                markdown,
                {**data, "results": [result]},
                size=str(result["entities"]),
                figures=key_figures(result),
            )
            print(f"results: {md.relative_to(REPO)}, {js.relative_to(REPO)}")
    return 0


def key_figures(result: dict[str, Any]) -> dict[str, Any]:
    """What history.csv keeps of one size: each server's p50 per tool (ms)."""
    figures: dict[str, Any] = {}
    for server in ("polyg", "official"):
        for op, st in (result.get(server) or {}).get("stats", {}).items():
            if op != "ping":
                figures[f"{server}_{op}_p50_ms"] = st["p50_ms"]
    return figures


if __name__ == "__main__":
    sys.exit(main())
