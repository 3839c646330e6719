"""The name validators, by property: whatever they accept is safe to interpolate into Cypher.

Every accepted label or relationship type is written into a real query against an embedded
FalkorDB, and the graph must then hold exactly the node or edge that was meant: one, with that
label or type, and nothing else. Nothing that could end a name early (quotes, backticks, braces,
brackets, whitespace, newlines) is ever accepted.
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from falkordb import FalkorDB
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polyg.errors import InvalidParams
from polyg.names import GRAPH_PREFIX, PROJECT_ID, check_project_id, check_type_name, graph_key
from polyg.store import names as registry
from polyg.store import schema
from polyg.store.embedded import EmbeddedFalkor
from polyg.store.names import (
    NAME,
    OWN_LABELS,
    OWN_REL_TYPES,
    RESERVED_REL_TYPES,
    SHARED_REL_TYPES,
    Label,
    RelType,
    user_label,
    user_rel_type,
)

REPO = Path(__file__).resolve().parents[2]

# Characters that could close a name and open query text of an attacker's choosing.
BREAKERS = "'\"`{}[]():;,.|\\/-+*=<>!?$%&^~#@ \t\r\n\x0b\x0c\x00\u00a0\u2028\u2029\u3000"
# Project ids may also hold '.' and '-' (they name a graph key, never query text).
PROJECT_BREAKERS = BREAKERS.replace(".", "").replace("-", "")
# Cypher keywords, which must still work as labels and types once validated.
KEYWORDS = (
    "MATCH RETURN CREATE DELETE DETACH MERGE SET REMOVE WHERE WITH UNWIND CALL YIELD UNION ALL "
    "OPTIONAL ORDER BY SKIP LIMIT AS ON AND OR XOR NOT IN IS NULL TRUE FALSE CASE WHEN THEN ELSE END "
    "DISTINCT EXISTS COUNT INDEX FOR CONSTRAINT ASC DESC STARTS ENDS CONTAINS null true false match return"
).split()

valid_names = st.from_regex(NAME, fullmatch=True)
names = st.one_of(
    valid_names,
    st.sampled_from(KEYWORDS),
    st.sampled_from(sorted(OWN_LABELS | OWN_REL_TYPES)),
    valid_names.map(lambda n: n + "\n"),  # passed re.match(...$) before fullmatch
    st.text(max_size=80),
    st.text(alphabet=string.ascii_letters + string.digits + "_" + BREAKERS, max_size=80),
)


def with_one_of(breakers: str) -> st.SearchStrategy[str]:
    """Strings holding at least one of `breakers` somewhere."""
    return st.tuples(
        st.text(alphabet=string.ascii_letters + "_", max_size=10), st.sampled_from(breakers), st.text(max_size=10)
    ).map("".join)


broken_names = with_one_of(BREAKERS)
broken_project_ids = with_one_of(PROJECT_BREAKERS)


def accepted(make: Any, value: object) -> str | None:
    try:
        return str(make(value))
    except InvalidParams:
        return None


# --- pure properties ---------------------------------------------------------------------------


@given(names)
def test_an_accepted_name_is_exactly_a_safe_identifier(value: str) -> None:
    for make in (Label, RelType):
        name = accepted(make, value)
        if name is None:
            continue
        assert name == value
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name, flags=re.ASCII)
        assert not any(ch in BREAKERS or ch.isspace() for ch in name)


@given(broken_names)
def test_nothing_that_can_break_out_of_a_name_is_accepted(value: str) -> None:
    for make in (Label, RelType, user_label, user_rel_type, check_type_name):
        assert accepted(make, value) is None, (make, value)


@given(broken_project_ids)
def test_no_project_id_holds_a_quote_a_brace_or_whitespace(value: str) -> None:
    assert accepted(check_project_id, value) is None


@given(names)
def test_users_get_every_valid_name_except_polygs_own(value: str) -> None:
    label, rel = accepted(Label, value), accepted(RelType, value)
    own_labels = {n.casefold() for n in OWN_LABELS}
    # polyg's own types but those it shares with users (written between entities, they are the user's).
    own_types = {n.casefold() for n in RESERVED_REL_TYPES}
    assert accepted(user_label, value) == (None if label is None or label.casefold() in own_labels else label)
    assert accepted(user_rel_type, value) == (None if rel is None or rel.casefold() in own_types else rel)


def test_reservation_ignores_case_and_trailing_newlines_are_refused() -> None:
    assert user_rel_type("depends_upon") == "depends_upon"
    assert RESERVED_REL_TYPES == OWN_REL_TYPES - SHARED_REL_TYPES
    for natural in ("wrote", "mentions", "depends_on", "DEPENDS_ON"):
        assert user_rel_type(natural) == natural
    for bad in ("imports\n", "HAS_OBSERVATION", "has_Observation", "Entity\n"):
        with pytest.raises(InvalidParams):
            check_type_name(bad)
    for own in ("Chunk", "chunk", "POLYGMETA"):
        with pytest.raises(InvalidParams, match="reserved"):
            user_label(own)
    with pytest.raises(InvalidParams):
        check_project_id("proj\n")


def test_error_messages_quote_a_long_bad_name_briefly() -> None:
    with pytest.raises(InvalidParams) as caught:
        Label("x" * 10_000 + "`")
    assert len(caught.value.message) < 300


@given(st.one_of(st.from_regex(PROJECT_ID, fullmatch=True), st.text(max_size=80), broken_project_ids))
def test_an_accepted_project_id_is_a_plain_graph_key(value: str) -> None:
    project = accepted(check_project_id, value)
    if project is None:
        return
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}", project, flags=re.ASCII)
    assert graph_key(project) == GRAPH_PREFIX + project


# --- against a real FalkorDB -------------------------------------------------------------------


@pytest.fixture(scope="module")
def falkor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FalkorDB]:
    with EmbeddedFalkor(tmp_path_factory.mktemp("names") / "db") as ef:
        ef.wait_until_loaded(60)
        db = FalkorDB(unix_socket_path=ef.socket_path)
        try:
            yield db
        finally:
            db.connection.close()


def fresh_graph(db: FalkorDB, key: str = "names") -> Any:
    db.connection.delete(key)
    return db.select_graph(key)


# Property values are the codec's business (integers beyond 64 bits are its to refuse).
MARKERS = st.integers(min_value=-(2**63), max_value=2**63 - 1)
DB_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@DB_SETTINGS
@given(names, MARKERS)
def test_an_accepted_label_creates_and_matches_exactly_that_label(falkor: FalkorDB, value: str, marker: int) -> None:
    label = accepted(Label, value)
    if label is None:
        return
    graph = fresh_graph(falkor)
    graph.query(f"CREATE (:{label} {{marker: $marker}})", {"marker": marker})
    assert graph.ro_query("MATCH (n) RETURN labels(n), n.marker").result_set == [[[label], marker]]
    assert graph.ro_query(f"MATCH (n:{label}) RETURN n.marker").result_set == [[marker]]


@DB_SETTINGS
@given(names, MARKERS)
def test_an_accepted_type_creates_and_matches_exactly_that_type(falkor: FalkorDB, value: str, marker: int) -> None:
    rel = accepted(RelType, value)
    if rel is None:
        return
    graph = fresh_graph(falkor)
    graph.query(f"CREATE (:A)-[:{rel} {{marker: $marker}}]->(:B)", {"marker": marker})
    assert graph.ro_query("MATCH (a)-[r]->(b) RETURN labels(a), type(r), r.marker, labels(b)").result_set == [
        [["A"], rel, marker, ["B"]]
    ]
    assert graph.ro_query(f"MATCH ()-[r:{rel}]->() RETURN r.marker").result_set == [[marker]]
    assert graph.ro_query("MATCH (n) RETURN count(n)").result_set == [[2]]


@DB_SETTINGS
@given(st.one_of(st.from_regex(PROJECT_ID, fullmatch=True), st.text(max_size=80)))
def test_an_accepted_project_id_names_exactly_its_own_graph(falkor: FalkorDB, value: str) -> None:
    project = accepted(check_project_id, value)
    if project is None:
        return
    key = graph_key(project)
    graph = fresh_graph(falkor, key)
    graph.query("CREATE (:N {project: $p})", {"p": project})
    assert key in falkor.list_graphs()
    assert graph.ro_query("MATCH (n) RETURN n.project").result_set == [[project]]
    falkor.connection.delete(key)


def test_project_ids_differing_in_case_are_two_graphs(falkor: FalkorDB) -> None:
    """Two projects are two graphs, even when their ids differ only in case."""
    for project in ("Alpha", "alpha"):
        fresh_graph(falkor, graph_key(project)).query("CREATE (:N {p: $p})", {"p": project})
    for project in ("Alpha", "alpha"):
        rows = falkor.select_graph(graph_key(project)).ro_query("MATCH (n) RETURN n.p").result_set
        assert rows == [[project]]
        falkor.connection.delete(graph_key(project))


# --- the registry is the only place --------------------------------------------------------------

# A label or a relationship type written literally in a Cypher pattern: `(e:Entity`, `[:HAS_X]`.
NODE_LABEL = re.compile(r"\(\w*:([A-Za-z_]\w*)")
REL_TYPE = re.compile(r"\[\w*:([A-Za-z_]\w*)")
# Names in Cypher shown to users as examples (in error messages), never written by polyg.
EXAMPLES = {"polyg/core/documents/user_cypher.py": {"KNOWS"}}


def string_literals(path: Path) -> Iterator[str]:
    """The module's string constants, docstrings left out (they may show Cypher by example)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.value


def test_every_label_and_type_polyg_writes_is_in_the_registry() -> None:
    """A new node kind or structural edge must be registered (and so reserved from users)."""
    labels, types = set(), set()
    for path in (REPO / "polyg").rglob("*.py"):
        for text in string_literals(path):
            labels.update(NODE_LABEL.findall(text))
            types.update(set(REL_TYPE.findall(text)) - EXAMPLES.get(path.relative_to(REPO).as_posix(), set()))
    assert labels, "the scan found no Cypher: the pattern is wrong"
    assert labels <= OWN_LABELS, f"labels outside the registry: {sorted(labels - OWN_LABELS)}"
    assert types <= OWN_REL_TYPES, f"relationship types outside the registry: {sorted(types - OWN_REL_TYPES)}"


def test_registry_constants_are_the_registry() -> None:
    constants = {v for k, v in vars(registry).items() if k.isupper() and isinstance(v, Label | RelType)}
    assert constants == OWN_LABELS | OWN_REL_TYPES
    assert all(type(label) is Label for label in OWN_LABELS)
    assert all(type(rel) is RelType for rel in OWN_REL_TYPES)


def test_the_index_lists_name_registered_labels() -> None:
    indexed = set(schema.RANGE_INDEXES) | set(schema.FULLTEXT_INDEXES) | set(schema.VECTOR_INDEXES)
    assert indexed <= OWN_LABELS


def test_polygs_own_names_are_made_only_in_the_registry() -> None:
    """Elsewhere they are imported from it, not spelt again."""
    made = re.compile(r"\b(?:Label|RelType)\(\s*['\"](\w+)['\"]")
    for path in (REPO / "polyg").rglob("*.py"):
        if path == REPO / "polyg/store/names.py":
            continue
        again = set(made.findall(path.read_text(encoding="utf-8"))) & (OWN_LABELS | OWN_REL_TYPES)
        assert not again, f"{path.relative_to(REPO)} spells {sorted(again)}: import them from polyg.store.names"
