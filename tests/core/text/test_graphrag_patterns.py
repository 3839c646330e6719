"""Rule-based relationship statements (polyg.core.text.relation_patterns) on a fixed set of sentences:
each of spec 004's seven relations, passive voice, negation, lists, and sentences that state
nothing."""

from __future__ import annotations

import pytest

from polyg.core.text.relation_patterns import RELATIONS, Statement, statements


def said(text: str) -> list[tuple[str, str, str | None, tuple[str, ...], bool]]:
    return [(s.relation, s.voice, s.subject, s.objects, s.negated) for s in statements(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Memory fragmentation causes slowdowns.", ("causes", "Memory fragmentation", ("slowdowns",))),
        ("TRAP Framework implements Sequential Thinking.", ("implements", "TRAP Framework", ("Sequential Thinking",))),
        ("This note relates to Quantum Computing.", ("relates_to", "note", ("Quantum Computing",))),
        ("Auth is part of the Platform.", ("part_of", "Auth", ("Platform",))),
        ("Auth is a part of the Platform.", ("part_of", "Auth", ("Platform",))),
        ("Postgres extends SQL.", ("extends", "Postgres", ("SQL",))),
        ("The gateway uses Redis for caching.", ("uses", "gateway", ("Redis",))),
        ("Billing depends on Ledger.", ("depends_on", "Billing", ("Ledger",))),
        ("Billing is dependent on Ledger.", ("depends_on", "Billing", ("Ledger",))),
    ],
)
def test_each_relation_in_active_voice(text: str, expected: tuple[str, str, tuple[str, ...]]) -> None:
    relation, subject, objects = expected
    assert said(text) == [(relation, "active", subject, objects, False)]


def test_every_relation_has_a_pattern() -> None:
    sentences = {
        "causes": "Xa causes Yb.",
        "implements": "Xa implements Yb.",
        "relates_to": "Xa relates to Yb.",
        "part_of": "Xa is part of Yb.",
        "extends": "Xa extends Yb.",
        "uses": "Xa uses Yb.",
        "depends_on": "Xa depends on Yb.",
    }
    assert set(sentences) == set(RELATIONS)
    for relation, text in sentences.items():
        assert said(text) == [(relation, "active", "Xa", ("Yb",), False)], relation


@pytest.mark.parametrize(
    ("text", "relation", "subject", "obj"),
    [
        ("Redis is used by the Payment Service.", "uses", "Redis", "Payment Service"),
        (
            "Memory fragmentation is caused by frequent allocation.",
            "causes",
            "Memory fragmentation",
            "frequent allocation",
        ),
        ("The interface is implemented by Worker.", "implements", "interface", "Worker"),
        ("Base was extended by Plugin.", "extends", "Base", "Plugin"),
        ("Ingest is depended on by Search.", "depends_on", "Ingest", "Search"),
        ("Kafka has been used by Billing since 2020.", "uses", "Kafka", "Billing"),
    ],
)
def test_passive_voice(text: str, relation: str, subject: str, obj: str) -> None:
    # Passive: the object of "by" is the relation's source (the caller swaps the ends).
    assert said(text) == [(relation, "passive", subject, (obj,), False)]


@pytest.mark.parametrize(
    "text",
    [
        "Payment service does not use MySQL.",
        "Payment service doesn't use MySQL.",
        "Payment service never used MySQL.",
        "Payment service no longer uses MySQL.",
        "MySQL is not used by Payment service.",
        "MySQL isn't used by Payment service.",
        "Auth is not part of Billing.",
        "Storms did not cause the outage.",
        "It does not depend on Java.",
    ],
)
def test_negation_is_recognised(text: str) -> None:
    found = statements(text)
    assert len(found) == 1 and found[0].negated, found


def test_subject_is_the_entity_itself_when_absent_or_a_pronoun() -> None:
    assert said("Uses Redis for caching.") == [("uses", "active", None, ("Redis",), False)]
    assert said("Redis is used by it.") == [("uses", "passive", "Redis", ("it",), False)]
    assert said("Uses Node.js and api.router_12 daily.") == [
        ("uses", "active", None, ("Node.js", "api.router_12 daily"), False)
    ]
    assert said("It uses Redis.") == [("uses", "active", None, ("Redis",), False)]
    assert said("They depend on Vault.") == [("depends_on", "active", None, ("Vault",), False)]


def test_lists_coordinated_verbs_and_several_sentences() -> None:
    assert said("It uses Redis, Kafka and Postgres.") == [
        ("uses", "active", None, ("Redis", "Kafka", "Postgres"), False)
    ]
    assert said("TRAP implements Sequential Thinking and uses Claude.") == [
        ("implements", "active", "TRAP", ("Sequential Thinking",), False),
        ("uses", "active", "TRAP", ("Claude",), False),
    ]
    assert said("Alice uses Go, but Bob uses Rust.") == [
        ("uses", "active", "Alice", ("Go",), False),
        ("uses", "active", "Bob", ("Rust",), False),
    ]
    assert said("It doesn't depend on Java. It depends on the JVM.") == [
        ("depends_on", "active", None, ("Java",), True),
        ("depends_on", "active", None, ("JVM",), False),
    ]


def test_a_title_or_initials_do_not_end_the_sentence() -> None:
    assert said("Dr. Smith uses Redis. It depends on Kafka.") == [
        ("uses", "active", "Dr. Smith", ("Redis",), False),
        ("depends_on", "active", None, ("Kafka",), False),
    ]
    assert said("The U.S. team uses Go.") == [("uses", "active", "U.S. team", ("Go",), False)]


@pytest.mark.parametrize(
    "text",
    [
        "Alice used to play tennis.",
        "Redis is used for caching.",
        "The cause of the outage is unknown.",
        "Nothing here states a relation.",
        "",
    ],
)
def test_sentences_that_state_no_relation(text: str) -> None:
    assert statements(text) == []


def test_statement_keeps_its_sentence_as_evidence() -> None:
    (found,) = statements("First sentence. Billing depends on Ledger!")
    assert found == Statement("depends_on", "active", "Billing", ("Ledger",), False, "Billing depends on Ledger!")
