"""The rule-based intent classifier: each intent, causal direction, time references read
against the reference time, entity mentions, and edge cases. Queries here are not those of
the development set the rules were tuned on."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from polyg.core.recall.classifier import rule_classify
from polyg.core.recall.model import ClassifierOutput

REF = datetime(2026, 1, 14, 12, 0, tzinfo=UTC)  # a Wednesday


def classify(query: str, known: tuple[str, ...] = ()) -> ClassifierOutput:
    return rule_classify(query, REF, known)


@pytest.mark.parametrize(
    ("query", "intents"),
    [
        ("What do we know about caching strategies?", ["semantic"]),
        ("anything on onboarding checklists", ["semantic"]),
        ("What happened yesterday?", ["temporal"]),
        ("list the releases in chronological order", ["temporal"]),
        ("Why did the nightly import stall?", ["causal"]),
        ("What would break if we removed the retry queue?", ["causal"]),
        ("Who maintains the ledger service?", ["entity"]),
        ("When did Priya join Acme Corp?", ["temporal", "entity"]),
        ("Why did the checkout flow break after Friday's release?", ["causal", "temporal"]),
        (
            "Summarize our notes on why search-indexer slowed down last week",
            ["causal", "temporal", "entity", "semantic"],
        ),
    ],
)
def test_intents(query: str, intents: list[str]) -> None:
    assert sorted(classify(query).intents) == sorted(intents)


@pytest.mark.parametrize(
    ("query", "direction"),
    [
        ("Why is the queue backing up?", "upstream"),
        ("What caused the spike in 500s?", "upstream"),
        ("What led to the data loss?", "upstream"),
        ("What happens if the cache goes cold?", "downstream"),
        ("What was the impact of the schema change?", "downstream"),
        ("Root cause and blast radius of the outage?", "both"),
    ],
)
def test_causal_direction(query: str, direction: str) -> None:
    out = classify(query)
    assert "causal" in out.intents
    assert out.causal_direction == direction


def test_no_direction_without_a_causal_question() -> None:
    assert classify("Who owns the ledger service?").causal_direction is None


@pytest.mark.parametrize(
    ("query", "kind", "value", "end"),
    [
        ("What happened yesterday?", "specific", "2026-01-13T00:00:00.000000Z", "2026-01-14T00:00:00.000000Z"),
        ("Show me the deploys since Monday", "range", "2026-01-12T00:00:00.000000Z", None),
        ("Which bugs were fixed in 2024?", "range", "2024-01-01T00:00:00.000000Z", "2025-01-01T00:00:00.000000Z"),
        ("What changed before the migration?", "relative", "before the migration", None),
    ],
)
def test_timeframe_read_against_the_reference_time(query: str, kind: str, value: str, end: str | None) -> None:
    tf = classify(query).timeframe
    assert tf is not None
    assert (tf.type, tf.value) == (kind, value)
    if end is not None:
        assert tf.end == end


def test_asking_for_a_time_is_temporal_without_a_timeframe() -> None:
    out = classify("When did the office move happen?")
    assert out.intents == ["temporal"]
    assert out.timeframe is None


@pytest.mark.parametrize(
    ("query", "entities"),
    [
        ("What does parse_config() return?", ["parse_config()"]),
        ("Who reviewed src/auth/session.py?", ["src/auth/session.py"]),
        ("What is billing-api deployed on?", ["billing-api"]),
        ("Who is on the Platform team?", ["Platform team"]),
        ("Did Ana Costa meet Dr. Okafor?", ["Ana Costa", "Dr. Okafor"]),
        ('Where is the "Blue Harbor" deck?', ["Blue Harbor"]),
        ("How does the RetryPolicy class work?", ["RetryPolicy"]),
    ],
)
def test_entity_mentions(query: str, entities: list[str]) -> None:
    assert [e.mention for e in classify(query).entities] == entities


def test_time_words_and_generic_nouns_are_not_entities() -> None:
    out = classify("Why did Thursday's deploy break the database?")
    assert out.entities == []
    assert out.timeframe is not None


def test_words_inside_a_name_are_not_cues() -> None:
    # "Cause" and "Midnight" belong to the names.
    assert classify("Who founded Root Cause Labs?").intents == ["entity"]
    out = classify("Who wrote Blue Midnight?")
    assert out.intents == ["entity"]
    assert out.timeframe is None


def test_hard_negatives_of_when_and_date() -> None:
    assert classify("How should I answer when a client asks for a refund?").intents == ["semantic"]
    assert classify("Which date picker did we pick?").intents == ["semantic"]


def test_known_names_are_found_in_any_case() -> None:
    out = classify("how old is pepper", known=("Pepper",))
    assert [e.mention for e in out.entities] == ["pepper"]
    assert out.intents == ["entity"]


def test_empty_query_is_a_low_confidence_semantic_lookup() -> None:
    out = classify("   ")
    assert out.intents == ["semantic"]
    assert out.confidence == 0.0


def test_very_long_query_is_bounded_and_less_confident() -> None:
    query = "Why did the payment-gateway time out after Tuesday's release? " + "context " * 5000
    out = classify(query)
    assert {"causal", "temporal", "entity"} <= set(out.intents)
    assert out.confidence < classify("Why did the payment-gateway time out after Tuesday's release?").confidence
    assert len(out.semantic_query or "") <= 4000


def test_confidence_is_lower_when_nothing_is_recognised() -> None:
    assert classify("Plasmid design notes").confidence > classify("kimchi").confidence


def test_semantic_query_drops_the_request_scaffolding() -> None:
    assert classify("What do we know about idempotency keys?").semantic_query == "idempotency keys"


def test_a_span_needs_a_time_at_one_end() -> None:
    out = classify("What changed in the API contract between v2 and v3?")
    assert out.timeframe is None
    assert "temporal" not in out.intents


def test_event_relative_times_without_a_date() -> None:
    for query in ("Did anything happen while I was on vacation?", "What did Jon do after losing his job?"):
        out = classify(query)
        assert "temporal" in out.intents, query
        assert out.timeframe is not None and out.timeframe.type == "relative", query


def test_a_sentence_opening_name_doing_something_is_a_name_a_plural_noun_is_not() -> None:
    assert [e.mention for e in classify("Ravi said the migration slipped. Why?").entities] == ["Ravi"]
    assert classify("Refunds jumped last week. Why?").entities == []


def test_acronyms_alone_are_kinds_with_a_head_noun_they_are_names() -> None:
    assert classify("Which PRs got merged two days ago?").entities == []
    assert [e.mention for e in classify("Who runs the EU region?").entities] == ["EU region"]


def test_names_the_graph_knows_are_not_joined_into_one_name() -> None:
    # "Jon and Gina" is two people when the graph knows them, not one firm of that name.
    out = classify("What do Jon and Gina both have in common?", known=("Jon", "Gina"))
    assert [e.mention for e in out.entities] == ["Jon", "Gina"]
    # One side known: the other side is a name of its own (to be resolved, maybe fuzzily).
    out = classify("Which city have both Jean and John visited?", known=("John",))
    assert [e.mention for e in out.entities] == ["Jean", "John"]
    # A known name before a noun that is not a head noun of it here ("team up").
    out = classify("When did Gina team up with a local artist?", known=("Gina",))
    assert [e.mention for e in out.entities] == ["Gina"]


def test_a_name_the_graph_knows_no_part_of_stays_whole() -> None:
    assert [e.mention for e in classify("Did Procter and Gamble ship the order?").entities] == ["Procter and Gamble"]
    assert [e.mention for e in classify("Who leads the Growth team?").entities] == ["Growth team"]
    # A longer name that holds a known one is still the longer name.
    out = classify("Did Jon Smith and Gina meet?", known=("Jon", "Gina"))
    assert [e.mention for e in out.entities] == ["Jon Smith", "Gina"]
