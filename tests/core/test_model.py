"""The property codec: what it accepts is stored as real properties and reads back unchanged
(through real FalkorDB, on nodes and on edges); what it refuses is a 4002 naming the problem."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from polyg.core.graph.edges import EdgeDraft
from polyg.core.graph.nodes import NodeDraft
from polyg.core.model import OWN_PROPERTY_KEYS, decode_properties, encode_properties
from polyg.errors import InvalidParams, PayloadTooLarge
from polyg.store.names import NAME

from .conftest import Core, run


def refused(value: object) -> str:
    with pytest.raises(InvalidParams) as caught:
        encode_properties(value)
    assert caught.value.code in (4002, 4013)
    return caught.value.message


@pytest.mark.parametrize("key", sorted(OWN_PROPERTY_KEYS))
def test_own_keys_are_refused(key: str) -> None:
    assert "reserved" in refused({key: 1})
    assert "reserved" in refused({key.upper(): 1})


@pytest.mark.parametrize("key", ["", "a-b", "1a", "a b", "a\n", "é", "x" * 65, "a`b", "a}", 3])
def test_keys_cypher_cannot_read_unquoted_are_refused(key: object) -> None:
    assert "Invalid property name" in refused({key: 1})


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({"a": 1}, "nested objects"),
        ([{"a": 1}], "dict"),
        ([[1]], "list"),
        ([1, None], "null"),
        ([1, "a"], "mixes"),
        ([True, 1], "mixes"),
        ("a\x00b", "NUL"),
        (["ok", "a\x00"], "NUL"),
        (math.nan, "finite"),
        (math.inf, "finite"),
        (-math.inf, "finite"),
        (1.7976931348623157e308, "finite"),  # FalkorDB would read it back as infinity
        (2**63, "64 bits"),
        (-(2**63) - 1, "64 bits"),
        ("\ud800", "surrogate"),
        (b"bytes", "bytes"),
        ({1, 2}, "set"),
    ],
)
def test_values_falkordb_cannot_store_are_refused(value: object, says: str) -> None:
    assert says in refused({"p": value})


def test_limits() -> None:
    with pytest.raises(PayloadTooLarge):
        encode_properties({f"p{i}": i for i in range(65)})
    with pytest.raises(PayloadTooLarge):
        encode_properties({"p": "x" * 16_385})
    with pytest.raises(PayloadTooLarge):
        encode_properties({"p": list(range(1025))})
    assert "must be an object" in refused(["p", 1])


def test_floats_are_kept_to_the_digits_falkordb_returns() -> None:
    assert encode_properties({"p": 0.1 + 0.2, "q": [1.5, 2], "r": -0.0}) == {"p": 0.3, "q": [1.5, 2], "r": -0.0}


def test_decode_leaves_out_polyg_keys_and_nulls() -> None:
    assert decode_properties({"id": "x", "embedding": [0.1], "rev": 2, "born": 1926, "gone": None}) == {"born": 1926}


# --- through real FalkorDB --------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats()
    | st.text(max_size=30)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=30)
)
values = (
    scalars
    | st.lists(st.booleans(), max_size=4)
    | st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.floats(allow_nan=False), max_size=4)
    | st.lists(st.text(max_size=10), max_size=4)
    | st.lists(scalars, max_size=3)
    | st.dictionaries(st.text(max_size=4), scalars, max_size=2)
)
keys = st.from_regex(NAME, fullmatch=True) | st.sampled_from(sorted(OWN_PROPERTY_KEYS)) | st.text(max_size=8)
anything = st.dictionaries(keys, values, max_size=6)
# Mostly what the codec accepts: any text (NUL and lone surrogates aside), any 64-bit int, any
# finite float, lists of one kind.
texts = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=40)
storable = st.dictionaries(
    st.from_regex(NAME, fullmatch=True).filter(lambda key: key not in OWN_PROPERTY_KEYS),
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
    | st.lists(texts, max_size=4)
    | st.lists(st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**63), 2**63 - 1), max_size=4)
    | st.lists(st.booleans(), max_size=4),
    max_size=8,
)


def canonical(props: dict[str, Any]) -> list[tuple[str, str]]:
    """Exact comparison: repr tells True from 1, 1.0 from 1 and -0.0 from 0.0."""
    return sorted((key, repr(value)) for key, value in props.items())


def node_count(core: Core, project: str) -> int:
    rows = run(core, core.services.ctx.read(project, "MATCH (n) RETURN count(n)"))
    return int(rows[0][0]) if rows else 0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(props=storable)
def test_whatever_the_codec_accepts_round_trips_through_falkordb(
    core: Core, project: str, props: dict[str, Any]
) -> None:
    check_round_trip(core, project, props)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(props=anything)
def test_anything_is_refused_whole_or_stored_whole(core: Core, project: str, props: dict[str, Any]) -> None:
    check_round_trip(core, project, props)


def check_round_trip(core: Core, project: str, props: dict[str, Any]) -> None:
    try:
        expected = {k: v for k, v in encode_properties(props).items() if v is not None}
    except InvalidParams:
        expected = None
    event("refused" if expected is None else f"accepted, {len(expected)} properties")
    before = node_count(core, project)
    [outcome] = run(core, core.nodes.create(project, [NodeDraft(name="n", type="thing", properties=props)]))
    if expected is None:
        assert outcome.status == "error" and outcome.code in (4002, 4013), outcome
        assert node_count(core, project) == before  # nothing half-written
        [edge] = run(core, core.edges.create(project, [EdgeDraft("n", "n", "LINKS", properties=props)]))
        assert edge.status == "error" and edge.code in (4002, 4013), edge
        return
    assert outcome.status == "created", outcome
    assert outcome.node is not None and outcome.id is not None
    assert canonical(dict(outcome.node.properties)) == canonical(expected)
    [stored] = run(core, core.nodes.get(project, [outcome.id]))
    assert canonical(dict(stored.properties)) == canonical(expected)
    # Template Cypher reads them as plain properties.
    for key, value in expected.items():
        rows = run(
            core, core.services.ctx.read(project, f"MATCH (n:Entity {{id: $id}}) RETURN n.{key}", {"id": stored.id})
        )
        assert repr(rows[0][0]) == repr(value)
    [edge] = run(core, core.edges.create(project, [EdgeDraft(outcome.id, outcome.id, "LINKS", properties=props)]))
    assert edge.status == "created", edge
    assert edge.id is not None
    assert canonical(dict(run(core, core.edges.get(project, edge.id)).properties)) == canonical(expected)
