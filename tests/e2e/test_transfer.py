"""`polyg import` / `polyg export` as a user runs them, on an embedded store.

The CLI runs in the test process (tests/cli_runner.py: its own click command, with the
environment, streams and exit code a subprocess had), on one embedded FalkorDB per module that
every command attaches to; the tests keep apart by working in projects of their own. What
stays a real process, because the process is the point:
- the stdout export of the memory JSONL round trip runs the installed `polyg` script, its
  stdout a pipe (1,700 lines written through it);
- the MCP servers of the JSON round trip (`serve`), which attach to the module's database.

The memory JSONL round trip runs on a generated file of 1,700 lines (several write batches of
entities and of relations, in shuffled order); the polyg JSON round trip on a project built
through the MCP tools (kg and memory-compat), whose export must come back identical after an
import into another project. The embedder is the deterministic `hashing` one: these tests are
about what is stored, not about search quality.
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from polyg.store.embedded import EmbeddedFalkor
from tests.cli_runner import Completed, held_store, run_cli, run_process
from tests.mcp_helpers import KG, open_log, reap_embedded, server_env

REPO = Path(__file__).resolve().parents[2]
POLYG = REPO / ".venv" / "bin" / "polyg"
if not POLYG.exists():  # a venv elsewhere (VENV=...): the script next to this interpreter
    POLYG = Path(sys.executable).with_name("polyg")

EMBEDDER = {"POLYG_EMBEDDING_PROVIDER": "hashing"}
REPORT = re.compile(r"created (\d+) entities, (\d+) relations; added (\d+) observations; skipped (\d+) lines")


# --- running the CLI ---------------------------------------------------------------------------


def polyg(root: Path, *args: str, process: bool = False) -> Completed:
    """Run `polyg ARGS --data-dir root/data` and return the finished command (any exit code): in
    this process, or with `process` as the installed script in a subprocess."""
    argv = [*args, "--data-dir", str(root / "data")]
    env = server_env(root, **EMBEDDER)
    return run_process([str(POLYG), *argv], env) if process else run_cli(argv, env)


def succeeds(root: Path, *args: str, process: bool = False) -> Completed:
    done = polyg(root, *args, process=process)
    assert done.returncode == 0, f"polyg {args} exited {done.returncode}:\n{done.stderr}"
    return done


def import_file(root: Path, path: Path, project: str) -> tuple[tuple[int, int, int, int], str]:
    """`polyg import`; returns (entities, relations, observations added, lines skipped) and stderr.
    An import that skipped lines exits 1 (it did not do all it was asked), else 0."""
    done = polyg(root, "import", str(path), "--project", project)
    assert done.stdout == "", "import must leave stdout alone"
    found = REPORT.search(done.stderr)
    assert found, done.stderr
    counts = tuple(int(n) for n in found.groups())
    assert done.returncode == (1 if counts[3] else 0), f"polyg import exited {done.returncode}:\n{done.stderr}"
    return (counts[0], counts[1], counts[2], counts[3]), done.stderr


def export_jsonl(
    root: Path, project: str, out: Path | None = None, *, process: bool = False
) -> tuple[dict[str, tuple[str, list[str]]], list[tuple[str, str, str]]]:
    """`polyg export --format memory-jsonl` to stdout (or to the file `out`, stdout left empty),
    as {name: (type, observations)} and relations; with `process`, in a subprocess."""
    args = ["export", "--format", "memory-jsonl", "--project", project]
    done = succeeds(root, *args, *(("--output", str(out)) if out else ()), process=process)
    if out is not None:
        assert done.stdout == ""
    text = done.stdout if out is None else out.read_text(encoding="utf-8")
    entities: dict[str, tuple[str, list[str]]] = {}
    relations: list[tuple[str, str, str]] = []
    for line in text.splitlines():
        item = json.loads(line)
        if item["type"] == "entity":
            assert set(item) == {"type", "name", "entityType", "observations"}, item
            assert item["name"] not in entities, f"entity exported twice: {item}"
            entities[item["name"]] = (item["entityType"], item["observations"])
        else:
            assert item["type"] == "relation" and set(item) == {"type", "from", "to", "relationType"}, item
            relations.append((item["from"], item["to"], item["relationType"]))
    assert f"exported {len(entities) + len(relations)} items" in done.stderr
    return entities, relations


def jsonl_lines(root: Path, project: str) -> list[str]:
    """The memory-jsonl export's lines, sorted (entities come in name order, relations in id order)."""
    return sorted(succeeds(root, "export", "--format", "memory-jsonl", "--project", project).stdout.splitlines())


def export_json(root: Path, project: str, out: Path | None = None) -> dict[str, Any]:
    args = ["export", "--format", "json", "--project", project]
    if out is None:
        document: dict[str, Any] = json.loads(succeeds(root, *args).stdout)
    else:
        assert succeeds(root, *args, "--output", str(out)).stdout == ""
        document = json.loads(out.read_text(encoding="utf-8"))
    assert document["format"] == "polyg-export" and document["project"] == project
    assert document["version"] == 2 and not document["embeddings"]
    return document


def entities_and_relationships(document: dict[str, Any]) -> dict[str, Any]:
    """The entities (with their observations) and the relationships between them of a
    version-2 export, shaped as version 1 of the format wrote them, which these tests read."""
    nodes = {(label, i["properties"]["id"]): i for i in document["items"] if i["kind"] == "node"
             for label in i["labels"] if "id" in i["properties"]}  # fmt: skip
    edges = [i for i in document["items"] if i["kind"] == "edge"]
    observations: dict[str, list[dict[str, Any]]] = {}
    for edge in edges:
        if edge["type"] == "HAS_OBSERVATION":
            o = nodes[("Observation", edge["to"]["id"])]["properties"]
            observations.setdefault(edge["from"]["id"], []).append(
                {"id": o["id"], "text": o["text"], "created_at": o.get("created_at")}
            )
    entities = []
    for (label, node_id), node in nodes.items():
        if label != "Entity":
            continue
        props = node["properties"]
        entities.append(
            {
                **{k: props.get(k) for k in ("id", "name", "type", "parent_id", "created_at", "updated_at")},
                "description": props.get("summary") or "",
                "observations": sorted(observations.get(node_id, []), key=lambda o: (o["created_at"], o["id"])),
            }
        )
    relationships = []
    for edge in edges:
        if edge["from"]["label"] != "Entity" or edge["to"]["label"] != "Entity":
            continue
        props = dict(edge["properties"])
        relationships.append(
            {
                "id": props.pop("id"),
                "source_id": edge["from"]["id"],
                "target_id": edge["to"]["id"],
                "from": nodes[("Entity", edge["from"]["id"])]["properties"]["name"],
                "to": nodes[("Entity", edge["to"]["id"])]["properties"]["name"],
                "type": edge["type"],
                "text": props.pop("label", None) or edge["type"],
                "description": props.pop("description", "") or "",
                "created_at": props.pop("created_at", None),
                "properties": props,
            }
        )
    return {"entities": entities, "relationships": relationships}


def progress_shown(stderr: str, project: str) -> bool:
    """rich's bar, finished: its description, the bar glyphs and 100%."""
    return any(f"importing into {project}" in line and "━" in line and "100%" in line for line in stderr.splitlines())


@pytest.fixture(scope="module")
def module_store(servers_root: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Path, EmbeddedFalkor]]:
    """The module's directory and its embedded FalkorDB, held open for the module: each
    command attaches to it instead of starting and stopping one. No embedded FalkorDB may
    outlive the module (a command still attached would keep it running)."""
    path = servers_root / f"transfer-{request.module.__name__.rsplit('.', 1)[-1]}"
    path.mkdir(parents=True)
    with held_store(path / "data") as store:
        yield path, store
    assert not reap_embedded(path / "data"), "an embedded FalkorDB outlived the CLI"


@pytest.fixture
def root(module_store: tuple[Path, EmbeddedFalkor]) -> Iterator[Path]:
    """The directory of the module's store (`--data-dir root/data`); the test's commands must
    have attached to its database, not stopped it and started another."""
    path, store = module_store
    pid = store.server_pid()
    assert pid is not None
    yield path
    assert store.server_pid() == pid, "the module's database was stopped by a command"


# --- a generated memory file -----------------------------------------------------------------

WORDS = 'alpha beta gamma delta Zoë O\'Brien 東京 café naïve "quoted" back\\slash data-set v2.0 node'.split()
ENTITY_TYPES = ["person", "company", "project", "city", "file", "some concept", "type-with-dash"]
RELATION_TYPES = [
    "works at",
    "is-part-of",
    "knows",
    "depends_on",
    "located in",
    "a.k.a.",
    "été à",
    "CONTAINS",
    "2nd cousin of",
    "HAS_OBSERVATION",
    "reports to (dotted line)",
]


def generate(n_entities: int, n_relations: int, seed: int = 7) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    rng = random.Random(seed)
    entities = []
    for i in range(n_entities):
        name = f"{rng.choice(WORDS)} {rng.choice(WORDS)} #{i}"
        observations = rng.sample(
            [
                f"fact {rng.randrange(10**6)} about {name}",
                f"shared fact {rng.randrange(40)}",  # the same text on many entities
                f"line with {rng.choice(WORDS)}\nand a newline",
                "short",
            ],
            rng.randint(1, 3),
        )
        entities.append(
            {"type": "entity", "name": name, "entityType": rng.choice(ENTITY_TYPES), "observations": observations}
        )
    relations: dict[tuple[str, str, str], dict[str, str]] = {}
    while len(relations) < n_relations:
        a, b = rng.choice(entities)["name"], rng.choice(entities)["name"]
        t = rng.choice(RELATION_TYPES)
        relations[(a, b, t)] = {"type": "relation", "from": a, "to": b, "relationType": t}
    return entities, list(relations.values())


def write_jsonl(path: Path, lines: list[Any]) -> Path:
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return path


# --- memory JSONL --------------------------------------------------------------------------------


# Enough lines for several write batches of each kind (the import writes entities 256 at a time
# and relations 1,000 at a time): what a file of thousands of lines would prove, at a third of
# the store's work.
N_ENTITIES, N_RELATIONS = 600, 1100


def test_memory_jsonl_round_trip_is_idempotent_and_exact(root: Path, tmp_path: Path) -> None:
    entities, relations = generate(N_ENTITIES, N_RELATIONS)
    lines: list[Any] = [*entities, *relations]
    random.Random(1).shuffle(lines)  # relation lines before the entities they name still work
    source = write_jsonl(tmp_path / "memory.jsonl", lines)
    assert len(source.read_text(encoding="utf-8").splitlines()) == N_ENTITIES + N_RELATIONS

    counts, stderr = import_file(root, source, "imported")
    # Every observation is counted, those of the entities created too.
    assert counts == (N_ENTITIES, N_RELATIONS, sum(len(e["observations"]) for e in entities), 0), stderr
    assert progress_shown(stderr, "imported"), stderr

    again, stderr = import_file(root, source, "imported")
    assert again == (0, 0, 0, 0), stderr

    # Through a pipe, as a shell script reads it: the one command of the module in a process.
    exported, exported_relations = export_jsonl(root, "imported", process=True)
    assert exported == {e["name"]: (e["entityType"], e["observations"]) for e in entities}
    assert len(exported_relations) == len(set(exported_relations)) == N_RELATIONS
    assert set(exported_relations) == {(r["from"], r["to"], r["relationType"]) for r in relations}


def test_import_merges_into_what_exists(root: Path, tmp_path: Path) -> None:
    first = write_jsonl(
        tmp_path / "first.jsonl",
        [
            {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["a", "b"]},
            {"type": "entity", "name": "Babbage", "entityType": "person"},
            {"type": "relation", "from": "Ada", "to": "Babbage", "relationType": "worked with"},
        ],
    )
    second = write_jsonl(
        tmp_path / "second.jsonl",
        [
            # Existing entity: its type is kept, only new observations are added, in order.
            {"type": "entity", "name": "Ada", "entityType": "robot", "observations": ["b", "c", "d"]},
            {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["d", "e"]},
            {"type": "entity", "name": "Engine", "entityType": "machine", "observations": []},
            {"type": "relation", "from": "Ada", "to": "Babbage", "relationType": "worked with"},
            {"type": "relation", "from": "Babbage", "to": "Engine", "relationType": "designed"},
            {"type": "relation", "from": "Babbage", "to": "Engine", "relationType": "designed"},
        ],
    )
    assert import_file(root, first, "p")[0] == (2, 1, 2, 0)
    assert import_file(root, second, "p")[0] == (1, 1, 3, 0)
    # Exported to a file (the stdout export has the round trip above): read back, and imported.
    exported = tmp_path / "exported.jsonl"
    entities, relations = export_jsonl(root, "p", exported)
    assert entities == {
        "Ada": ("person", ["a", "b", "c", "d", "e"]),
        "Babbage": ("person", []),
        "Engine": ("machine", []),
    }
    assert sorted(relations) == [("Ada", "Babbage", "worked with"), ("Babbage", "Engine", "designed")]
    # The export is itself a memory file: imported into another project, the same graph.
    assert import_file(root, exported, "copy")[0] == (3, 2, 5, 0)
    copied, copied_relations = export_jsonl(root, "copy")
    assert copied == entities and sorted(copied_relations) == sorted(relations)


def test_malformed_lines_are_reported_and_the_rest_imported(root: Path, tmp_path: Path) -> None:
    good_a = {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["first", "second"]}
    good_b = {"type": "entity", "name": "Babbage", "entityType": "person"}
    lines: list[Any] = [
        good_a,  # 1
        "",  # 2 blank
        '{"type": "entity", "name": "Broken"',  # 3 not JSON
        {"type": "entity", "name": "NoType"},  # 4 missing entityType
        {"type": "entity", "name": 42, "entityType": "number"},  # 5 wrong type
        {"type": "entity", "name": "Obs", "entityType": "t", "observations": "not a list"},  # 6
        {"type": "entity", "name": "Obs2", "entityType": "t", "observations": ["ok", 7]},  # 7
        {"type": "relation", "from": "Ada", "to": "Babbage"},  # 8 missing relationType
        {"type": "relation", "from": "Ada", "to": "Nobody", "relationType": "knows"},  # 9 unknown entity
        {"type": "relation", "from": "Ada", "to": "Babbage", "relationType": "works with"},  # 10 good
        '"just a string"',  # 11
        {"type": "widget", "name": "W"},  # 12 unknown kind
        {"type": "entity", "name": "   ", "entityType": "t"},  # 13 empty name
        good_b,  # 14 (after the relation that names it)
        "   \t",  # 15 blank
        {"type": "relation", "from": 1, "to": "Ada", "relationType": "x"},  # 16
        {"type": "entity", "name": "x" * 600, "entityType": "t"},  # 17 name too long
        {"type": "entity", "name": "Empty obs", "entityType": "t", "observations": ["fine", ""]},  # 18
        {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["third"]},  # 19 merged into 1
        {"type": "relation", "from": "Ghost", "to": "Spirit", "relationType": "haunts"},  # 20 unknown entities
        "[1, 2]",  # 21
        "null",  # 22
    ]
    bad = {3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16, 17, 18, 20, 21, 22}
    path = write_jsonl(tmp_path / "malformed.jsonl", lines)

    counts, stderr = import_file(root, path, "messy")
    assert counts == (2, 1, 3, len(bad)), stderr
    reported = {int(n) for n in re.findall(r"skipped line (\d+):", stderr)}
    assert reported == bad, stderr
    assert re.search(r"skipped line 9: .*'Nobody'", stderr), stderr
    assert re.search(r"skipped line 20: .*'Ghost'", stderr), stderr
    assert progress_shown(stderr, "messy"), stderr
    assert export_jsonl(root, "messy") == (
        {"Ada": ("person", ["first", "second", "third"]), "Babbage": ("person", [])},
        [("Ada", "Babbage", "works with")],
    )
    # Importing the same file again: nothing new, the same lines reported.
    counts, stderr = import_file(root, path, "messy")
    assert counts == (0, 0, 0, len(bad))
    assert {int(n) for n in re.findall(r"skipped line (\d+):", stderr)} == bad


def test_cli_errors(root: Path, tmp_path: Path) -> None:
    done = polyg(root, "export", "--format", "yaml")
    assert done.returncode == 2 and "Error: Unknown format 'yaml'" in done.stderr and "(code 4002)" in done.stderr
    empty = write_jsonl(tmp_path / "empty.jsonl", [])
    done = polyg(root, "import", str(empty), "--format", "csv")
    assert done.returncode == 2 and "(code 4002)" in done.stderr
    assert import_file(root, empty, "nothing")[0] == (0, 0, 0, 0)
    not_ours = tmp_path / "other.json"
    not_ours.write_text(json.dumps({"format": "something-else", "entities": []}), encoding="utf-8")
    done = polyg(root, "import", str(not_ours))
    assert done.returncode == 2 and "Error: Not a polyg export" in done.stderr, done.stderr
    assert polyg(root, "import", str(tmp_path / "missing.jsonl")).returncode != 0


# --- polyg JSON --------------------------------------------------------------------------------


@asynccontextmanager
async def serve(root: Path, project: str) -> AsyncIterator[KG]:
    params = StdioServerParameters(
        command=str(POLYG),
        args=["serve", "--data-dir", str(root / "data"), "--project", project, "--toolsets", "kg,memory-compat"],
        env=server_env(root, **EMBEDDER),
    )
    with open_log(root / "stderr.log") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            yield KG(client, "stdio", root, project)


async def build_source_project(kg: KG) -> dict[str, str]:
    """Entities and relationships with everything polyg stores; returns name -> id."""

    async def entity(name: str, type_: str, **extra: Any) -> str:
        return str((await kg.ok("create_entity", {"name": name, "type": type_, **extra}))["entity"]["id"])

    ids = {"repo": await entity("repo", "project", description="the repository")}
    ids["app"] = await entity(
        "src/app.py",
        "file",
        description="entry point",
        observations=["defines main()", "imports polyg", "to be deleted"],
        parentId=ids["repo"],
    )
    ids["snow"] = await entity('Ünïcode ☃ "name"', "concept", observations=["多语言 text", "line\nbreak"])
    ids["twin1"] = await entity("twin", "file")  # kg allows two entities of one name
    ids["twin2"] = await entity("twin", "file", parentId=ids["twin1"])
    await kg.ok("update_entity_description", {"entity_id": ids["snow"], "description": "changed later"})
    await kg.ok("add_observation", {"entity_id": ids["app"], "observation": "added later"})
    app = (await kg.ok("get_entity", {"entity_id": ids["app"]}))["entity"]
    doomed = next(o["id"] for o in app["observations"] if o["text"] == "to be deleted")
    await kg.ok("delete_observation", {"entity_id": ids["app"], "observation_id": doomed})
    for source, target, type_, description in [
        ("repo", "app", "CONTAINS", "holds the entry point"),
        ("app", "snow", "REFERS_TO", ""),
        ("twin2", "twin1", "COPIES", "a copy"),
        ("app", "app", "CALLS", "recursion"),
    ]:
        await kg.ok(
            "create_relationship",
            {"source_id": ids[source], "target_id": ids[target], "type": type_, "description": description},
        )
    await kg.ok(
        "create_entities",
        {
            "entities": [
                {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]},
                {"name": "Acme Corp.", "entityType": "company name"},
            ]
        },
    )
    await kg.ok(
        "create_relations",
        {
            "relations": [
                {"from": "Ada", "to": "Acme Corp.", "relationType": "works at"},
                {"from": "Ada", "to": "Acme Corp.", "relationType": "works_at"},
                {"from": "src/app.py", "to": "Acme Corp.", "relationType": "is-part-of"},
                {"from": "Ada", "to": "repo", "relationType": "HAS_OBSERVATION"},
                {"from": "Ada", "to": 'Ünïcode ☃ "name"', "relationType": "été à"},
            ]
        },
    )
    await kg.ok("add_observations", {"observations": [{"entityName": "Ada", "contents": ["born 1815"]}]})
    return ids


def without_project(document: dict[str, Any]) -> dict[str, Any]:
    """The document but its project, its items in an order of their own (the store's order of
    nodes is the order of their writes, which an import does not keep)."""
    rest = {k: v for k, v in document.items() if k not in ("project", "items")}
    return {**rest, "items": sorted(document["items"], key=lambda i: json.dumps(i, sort_keys=True))}


def import_graph(root: Path, path: Path, project: str) -> tuple[int, int, int]:
    """`polyg import` of a JSON export: (nodes created, relationships created, already there)."""
    done = succeeds(root, "import", str(path), "--project", project)
    assert done.stdout == "", "import must leave stdout alone"
    found = re.search(r"created (\d+) nodes, (\d+) relationships; (\d+) already there", done.stderr)
    assert found, done.stderr
    assert progress_shown(done.stderr, project), done.stderr
    nodes, edges, there = (int(n) for n in found.groups())
    return nodes, edges, there


@pytest.mark.anyio
async def test_json_export_import_restores_a_project_exactly(root: Path, tmp_path: Path) -> None:
    async with serve(root, "source") as kg:
        ids = await build_source_project(kg)
        before = {key: (await kg.ok("get_entity", {"entity_id": i}))["entity"] for key, i in ids.items()}
        graph_before = await kg.ok("read_graph", {"limit": 1000})

    original = export_json(root, "source", tmp_path / "source.json")
    view = entities_and_relationships(original)
    entities = {e["id"]: e for e in view["entities"]}
    rels = {(r["from"], r["to"], r["text"]): r for r in view["relationships"]}
    # What the document has to carry (so that comparing two exports means something).
    assert len(entities) == 7 and len(rels) == 9
    assert entities[ids["app"]]["parent_id"] == ids["repo"]
    assert entities[ids["app"]]["description"] == "entry point"
    assert [o["text"] for o in entities[ids["app"]]["observations"]] == [
        "defines main()",
        "imports polyg",
        "added later",
    ]
    assert entities[ids["snow"]]["updated_at"] > entities[ids["snow"]]["created_at"]
    assert rels[("repo", "src/app.py", "CONTAINS")]["description"] == "holds the entry point"
    assert rels[("Ada", "Acme Corp.", "works at")]["type"] == "works_at"
    assert rels[("Ada", "Acme Corp.", "works_at")]["type"] == "works_at"
    assert rels[("Ada", "repo", "HAS_OBSERVATION")]["type"] != "HAS_OBSERVATION"

    # 7 entities, their 7 observations (and the project's relationship types); 9 relationships
    # between entities and 7 to observations.
    nodes = sum(1 for i in original["items"] if i["kind"] == "node" and "PolygMeta" not in i["labels"])
    edges = sum(1 for i in original["items"] if i["kind"] == "edge")
    assert sum(1 for i in original["items"] if "Observation" in i.get("labels", ())) == 7 and edges == 9 + 7
    assert import_graph(root, tmp_path / "source.json", "restored") == (nodes, edges, 0)
    assert import_graph(root, tmp_path / "source.json", "restored") == (0, 0, nodes + edges)  # idempotent
    restored = export_json(root, "restored")  # to stdout this time
    assert without_project(restored) == without_project(original)
    assert jsonl_lines(root, "restored") == jsonl_lines(root, "source")

    # The restored project works like the original: same entities by id, searchable again.
    async with serve(root, "restored") as kg:
        after = {key: (await kg.ok("get_entity", {"entity_id": i}))["entity"] for key, i in ids.items()}
        assert after == before
        assert await kg.ok("read_graph", {"limit": 1000}) == graph_before
        found = await kg.ok("search_nodes", {"query": "Ada", "limit": 1})
        assert [e["name"] for e in found["entities"]] == ["Ada"]
        related = await kg.ok("get_relationships", {"entity_id": ids["repo"], "direction": "outgoing"})
        assert [(r["type"], r["description"]) for r in related["relationships"]] == [
            ("CONTAINS", "holds the entry point")
        ]


def test_json_import_does_not_trust_relationship_types(root: Path, tmp_path: Path) -> None:
    """A relationship type is interpolated into Cypher: one that is not a valid name is not used as is."""
    hostile = "KNOWS]->(b) WITH a MATCH (n) DETACH DELETE n //"
    stamp = "2024-01-01T00:00:00.000000Z"
    document = {
        "format": "polyg-export",
        "version": 1,
        "project": "elsewhere",
        "entities": [
            {
                "id": f"ent_{i:016x}",
                "name": name,
                "type": "thing",
                "parent_id": None,
                "created_at": stamp,
                "updated_at": stamp,
                "description": "",
                "observations": [],
            }
            for i, name in enumerate(["a", "b"])
        ],
        "relationships": [
            {
                "id": "rel_0000000000000001",
                "source_id": "ent_0000000000000000",
                "target_id": "ent_0000000000000001",
                "from": "a",
                "to": "b",
                "type": hostile,
                "text": hostile,
                "description": "",
                "created_at": stamp,
                "properties": {},
            },
            {
                "id": "rel_0000000000000002",
                "source_id": "ent_0000000000000000",
                "target_id": "ent_0000000000000001",
                "from": "a",
                "to": "b",
                "type": "HAS_OBSERVATION",
                "text": "HAS_OBSERVATION",
                "description": "",
                "created_at": stamp,
                "properties": {},
            },
        ],
    }
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    counts, stderr = import_file(root, path, "target")
    assert counts == (2, 2, 0, 0), stderr
    entities, relations = export_jsonl(root, "target")
    assert entities == {"a": ("thing", []), "b": ("thing", [])}
    assert sorted(relations) == sorted([("a", "b", hostile), ("a", "b", "HAS_OBSERVATION")])
    types = {r["type"] for r in entities_and_relationships(export_json(root, "target"))["relationships"]}
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", t) for t in types) and "HAS_OBSERVATION" not in types


# --- hostile and odd files -----------------------------------------------------------------------


def test_a_nul_line_is_reported_by_number_and_the_rest_imported(root: Path, tmp_path: Path) -> None:
    """A NUL character used to abort the import after the first batch (256 entities) was written."""
    lines: list[Any] = [
        {"type": "entity", "name": f"e{i:03d}", "entityType": "t", "observations": ["o"]} for i in range(600)
    ]
    lines[400] = {"type": "entity", "name": "bad\u0000name", "entityType": "t"}
    lines.append({"type": "relation", "from": "e001", "to": "e002", "relationType": "with\u0000nul"})
    lines.append({"type": "relation", "from": "e001", "to": "e002", "relationType": "knows"})
    path = write_jsonl(tmp_path / "nul.jsonl", lines)
    counts, stderr = import_file(root, path, "nul")
    assert counts == (599, 1, 599, 2), stderr
    assert {int(n) for n in re.findall(r"skipped line (\d+):", stderr)} == {401, 601}, stderr
    assert "NUL" in stderr
    entities, relations = export_jsonl(root, "nul")
    assert len(entities) == 599 and relations == [("e001", "e002", "knows")]


def test_files_are_read_as_written(root: Path, tmp_path: Path) -> None:
    first = {"type": "entity", "name": "first", "entityType": "t", "observations": ['"format": in an observation']}
    second = {"type": "entity", "name": "second", "entityType": "t"}
    # A byte-order mark before the first line, which also mentions "format" near its start.
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + (json.dumps(first) + "\n" + json.dumps(second) + "\n").encode())
    counts, stderr = import_file(root, bom, "bom")
    assert counts == (2, 0, 1, 0), stderr
    assert export_jsonl(root, "bom")[0] == {"first": ("t", ['"format": in an observation']), "second": ("t", [])}

    mentions_format = write_jsonl(
        tmp_path / "fmt.jsonl", [{"format": "x", "type": "entity", "name": "f", "entityType": "t"}]
    )
    assert import_file(root, mentions_format, "fmt")[0] == (1, 0, 0, 0)

    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(
        (json.dumps(first) + "\n" + json.dumps(second) + "\n").encode() + '{"name": "café"}\n'.encode("latin-1")
    )
    done = polyg(root, "import", str(latin1), "--project", "latin")
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert re.search(r"^Error: .*line 3: not UTF-8", done.stderr, re.M), done.stderr
    # Decoded whole before anything was written: the project was not even created.
    status = succeeds(root, "status").stdout
    assert "bom" in status and "latin" not in status, status

    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "polyg-export",\n "entities": [\n}', encoding="utf-8")
    done = polyg(root, "import", str(broken))
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert re.search(r"^Error: .*line 3: not JSON", done.stderr, re.M), done.stderr


def test_json_import_applies_the_tools_limits_and_keeps_polyg_keys(root: Path, tmp_path: Path) -> None:
    stamp = "2024-01-01T00:00:00.000000Z"

    def entity(i: int, name: str, **extra: Any) -> dict[str, Any]:
        return {"id": f"ent_{i:016x}", "name": name, "type": "thing", "created_at": stamp, "updated_at": stamp,
                "description": "", "observations": [], **extra}  # fmt: skip

    document = {
        "format": "polyg-export",
        "version": 1,
        "project": "elsewhere",
        "entities": [
            entity(0, "a"),
            entity(1, "  b  "),
            entity(2, "nul\u0000name"),
            entity(3, "\u200b"),
            entity(4, "long", description="d" * 20_000),
            entity(5, "obs", observations=[{"id": "obs_1", "text": "x\u0000"}]),
        ],
        "relationships": [
            {
                "id": "rel_0000000000000001",
                "source_id": "ent_0000000000000000",
                "target_id": "ent_0000000000000001",
                "type": "KNOWS",
                "text": "KNOWS",
                "description": "",
                "created_at": stamp,
                "properties": {"id": "rel_evil", "label": "forged", "created_at": "never", "weight": 0.5},
            },
            {
                "id": "rel_0000000000000002",
                "source_id": "ent_0000000000000000",
                "target_id": "ent_0000000000000001",
                "type": "LIKES",
                "text": "LIKES",
                "properties": {"bad key!": 1},
            },
        ],
    }
    path = tmp_path / "limits.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    counts, stderr = import_file(root, path, "limited")
    assert counts == (2, 1, 0, 5), stderr
    exported = entities_and_relationships(export_json(root, "limited"))
    assert sorted(e["name"] for e in exported["entities"]) == ["a", "b"]
    (rel,) = exported["relationships"]
    assert rel["id"] == "rel_0000000000000001" and rel["text"] == "KNOWS" and rel["created_at"] == stamp
    assert rel["properties"] == {"weight": 0.5}
