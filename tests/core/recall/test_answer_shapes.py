"""The rule synthesiser answers what the question asks (polyg/core/recall/answering.py): the
subject for who, the date for when, the events after X for "what happened after X", the chain
told over memories for why, and an honest "nothing" for a why nothing stored explains."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from polyg.core.recall.classifier import rule_classify
from polyg.core.recall.evidence import Evidence
from polyg.core.recall.executor import Execution
from polyg.core.recall.model import EntityMention
from polyg.core.recall.output import SynthesizerOutput
from polyg.core.recall.synthesiser import NOTHING_EXPLAINS, rule_synthesise

REF = datetime(2026, 1, 14, 12, 0, tzinfo=UTC)


def answer(query: str, *, resolved: dict[str, str] | None = None, **results: list[Evidence]) -> SynthesizerOutput:
    plan = rule_classify(query, REF)
    if resolved:
        plan = plan.model_copy(update={"entities": [EntityMention(mention=m, resolved=i) for m, i in resolved.items()]})
    return rule_synthesise(query, plan, Execution(results=dict(results)), REF)  # type: ignore[arg-type]


def memory(id_: str, text: str, score: float, at: str = "2026-01-07T10:00:00Z") -> Evidence:
    return Evidence(id_, text, "semantic", "memory", score, at=at, memories=(id_,))


def test_who_answers_with_the_subject_of_the_inverse_fact_and_no_bare_name() -> None:
    evidence = [
        Evidence("ent_p", "Platform team", "entity", "entity", 1.0),
        Evidence(
            "f1",
            "Alice leads Platform team",
            "entity",
            "fact",
            0.8,
            subject="Alice",
            predicate="leads",
            object="Platform team",
            at="2024-01-03T09:00:00Z",
        ),
        Evidence(
            "f2",
            "Maya member of Platform team",
            "entity",
            "fact",
            0.8,
            subject="Maya",
            predicate="member_of",
            object="Platform team",
            at="2024-01-03T09:00:00Z",
        ),
    ]
    out = answer("Who leads the Platform team?", resolved={"Platform team": "ent_p"}, entity=evidence)
    assert out.answer == "Alice leads the Platform team."


@pytest.mark.parametrize(
    ("question", "subject", "predicate", "obj", "said"),
    [
        ("Who manages the community garden?", "Elif", "leads", "community garden", "Elif leads the community garden."),
        (
            "What does the payroll service run on?",
            "payroll service",
            "runs_on",
            "Boreal",
            "The payroll service runs on Boreal.",
        ),
    ],
)
def test_a_thing_named_by_common_nouns_takes_the_article(
    question: str, subject: str, predicate: str, obj: str, said: str
) -> None:
    # remember stores "community garden" and "payroll service" as said, without "the".
    asked = obj if subject[0].isupper() else subject
    evidence = [
        Evidence("e", asked, "entity", "entity", 1.0),
        Evidence(
            "f", f"{subject} {predicate} {obj}", "entity", "fact", 0.8, subject=subject, predicate=predicate, object=obj
        ),
    ]
    assert answer(question, resolved={asked: "e"}, entity=evidence).answer == said


def test_when_answers_with_the_date_once() -> None:
    event = Evidence(
        "e1",
        "Yesterday at 14:30 Sam restarted the database cluster.",
        "temporal",
        "event",
        0.9,
        at="2025-11-19T14:30:00.000000Z",
    )
    out = answer("When did Sam restart the database cluster?", temporal=[event])
    assert out.answer == "Sam restarted the database cluster on 2025-11-19 at 14:30 UTC."


def test_what_happened_after_x_is_anchored_at_x() -> None:
    events = [
        Evidence("e1", "Deployment v2.3.1 started", "temporal", "event", 0.5, at="2026-01-07T14:00:00Z"),
        Evidence("e2", "The auth service crashed", "temporal", "event", 0.5, at="2026-01-07T14:05:00Z"),
        Evidence("e3", "Rollback to v2.3.0 finished", "temporal", "event", 0.5, at="2026-01-07T15:20:00Z"),
    ]
    out = answer("What happened after the auth service crashed?", temporal=events)
    assert out.answer == "On 2026-01-07 15:20 UTC: Rollback to v2.3.0 finished."


def test_why_follows_a_chain_told_over_memories_to_its_root() -> None:
    told = [
        memory("m1", "The samples spoiled because the freezer warmed to 5 degrees.", 0.95),
        memory("m2", "The freezer warmed to 5 degrees because the power outage lasted six hours.", 0.6),
        memory("m3", "The lab ordered new pipettes.", 0.5),
    ]
    out = answer("Why did the samples spoil?", semantic=told)
    assert out.answer == (
        "The samples spoiled because the freezer warmed to 5 degrees. "
        "The freezer warmed to 5 degrees because the power outage lasted six hours."
    )
    assert [s.evidence_id for s in out.reasoning.causal_chain] == ["m1", "m2"]


def test_a_why_nothing_stored_explains_says_so_with_low_confidence() -> None:
    told = [memory("m1", "The match against Riverside was cancelled because the pitch was flooded.", 0.95)]
    out = answer("Why did the swimming pool close?", semantic=told)
    assert out.answer == NOTHING_EXPLAINS
    assert out.confidence <= 0.1


def test_a_past_fact_says_when_it_held() -> None:
    fact = Evidence(
        "f0",
        "Alice works on Payment Service",
        "entity",
        "fact",
        0.9,
        subject="Alice",
        predicate="works_on",
        object="Payment Service",
        at="2024-01-03T09:05:00Z",
        valid_to="2025-06-01T00:00:00Z",
    )
    out = answer("What did Alice work on in 2024?", entity=[fact])
    assert out.answer.startswith("Alice works on the Payment Service (from 2024-01-03 until June 2025).")


def test_who_is_x_answers_with_the_memory_that_says_who_x_is() -> None:
    told = [
        memory("m1", "Tom: My brother Ravi lives in Cardiff.", 0.8),
        memory("m2", "Tom: Ravi and I went hiking.", 0.9),
    ]
    out = answer("Who is Ravi?", resolved={"Ravi": "ent_r"}, semantic=told)
    assert out.answer == "Tom's brother Ravi lives in Cardiff."


def test_words_are_compared_with_their_inflections() -> None:
    from polyg.core.recall.answering import word_key

    assert len({word_key(w) for w in ("play", "plays", "played", "playing")}) == 1
    assert len({word_key(w) for w in ("move", "moved", "moves", "moving")}) == 1
    assert len({word_key(w) for w in ("study", "studies", "studied")}) == 1
    assert word_key("lisbon") != word_key("list")


def test_who_now_is_the_later_memory_that_says_as_much() -> None:
    # The older sentence scores higher by search (its vector may be the only one stored yet):
    # a present-tense who-question still answers with the change told later.
    told = [
        memory("m1", "Sofia Lindgren is the drummer of The Paper Kites.", 0.9, at="2025-05-01T20:00:00Z"),
        memory(
            "m2",
            "In November 2025 Jonas Berg replaced Sofia Lindgren as drummer of The Paper Kites.",
            0.5,
            at="2025-11-20T20:00:00Z",
        ),
    ]
    out = answer("Who is the drummer of The Paper Kites?", resolved={"The Paper Kites": "ent_k"}, semantic=told)
    assert out.answer.startswith("In November 2025 Jonas Berg replaced"), out.answer


def test_who_at_a_named_time_is_told_by_the_sentence_of_that_time() -> None:
    # "until April 2026" covers March; "since May 2026" does not, though it scores higher.
    told = [
        memory("m1", "Greta: Since May 2026 we buy our flour from Hollow Oak Mill.", 0.9, at="2026-06-01T07:04:00Z"),
        memory("m2", "Greta: Our flour came from Millbrook Farms until April 2026.", 0.6, at="2026-06-01T07:02:00Z"),
    ]
    out = answer("Who supplied the flour in March 2026?", semantic=told)
    assert "Millbrook Farms" in out.answer and "Hollow Oak" not in out.answer, out.answer


def test_asked_about_now_a_sentence_a_current_fact_replaced_is_no_answer() -> None:
    told = [memory("m1", "The payroll service runs on the Atlas cluster.", 0.9, at="2026-02-02T09:00:00Z")]
    holding = Evidence(
        "f1",
        "payroll service runs on Boreal cluster",
        "entity",
        "fact",
        0.8,
        subject="payroll service",
        predicate="runs_on",
        object="Boreal cluster",
        at="2026-03-14T00:00:00Z",
    )
    out = answer(
        "Which cluster does the payroll service run on?",
        resolved={"payroll service": "ent_p"},
        semantic=told,
        entity=[holding],
    )
    assert out.answer.startswith("The payroll service runs on the Boreal cluster"), out.answer
    assert "Atlas" not in out.answer, out.answer
