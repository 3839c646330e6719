"""The rule-based synthesiser: answers composed from the evidence of one or several graphs,
confidence from the evidence, follow-ups, and honesty when there is nothing."""

from __future__ import annotations

from datetime import UTC, datetime

from polyg.core.recall.classifier import rule_classify
from polyg.core.recall.evidence import Evidence
from polyg.core.recall.executor import Execution
from polyg.core.recall.synthesiser import NOTHING_STORED, rule_synthesise

REF = datetime(2026, 1, 14, 12, 0, tzinfo=UTC)

CHAIN = [
    Evidence(
        "c1",
        "missing AUTH_SECRET -> auth service crash",
        "causal",
        "cause",
        0.95,
        cause="missing AUTH_SECRET",
        effect="auth service crash",
        depth=1,
    ),
    Evidence(
        "c2",
        "deploy v2.3.1 -> missing AUTH_SECRET",
        "causal",
        "cause",
        0.84,
        cause="deploy v2.3.1",
        effect="missing AUTH_SECRET",
        depth=2,
        neighbours=("deploy pipeline",),
    ),
]
EVENTS = [
    Evidence("e2", "Auth service crashed", "temporal", "event", 0.9, at="2026-01-07T14:05:00.000000Z"),
    Evidence("e1", "Deployment v2.3.1 started", "temporal", "event", 0.8, at="2026-01-07T14:00:00.000000Z"),
]
FACTS = [
    Evidence(
        "f1",
        "Alice works_on Auth Service",
        "entity",
        "fact",
        0.9,
        at="2025-06-01T00:00:00.000000Z",
        subject="Alice",
        predicate="works_on",
        object="Auth Service",
    ),
    Evidence(
        "f0",
        "Alice works_on Payment Service",
        "entity",
        "fact",
        0.9,
        at="2024-01-01T00:00:00.000000Z",
        subject="Alice",
        predicate="works_on",
        object="Payment Service",
        valid_to="2025-05-31T00:00:00.000000Z",
    ),
]


def run(query: str, **results: list[Evidence]) -> tuple[str, float, list[str]]:
    plan = rule_classify(query, REF)
    out = rule_synthesise(query, plan, Execution(results=dict(results)), REF)  # type: ignore[arg-type]
    return out.answer, out.confidence, out.sources


def test_causal_chain_reads_as_because_because() -> None:
    plan = rule_classify("Why did the auth service crash?", REF)
    out = rule_synthesise("Why did the auth service crash?", plan, Execution(results={"causal": CHAIN}), REF)
    assert out.answer == "Auth service crash because missing AUTH_SECRET, because deploy v2.3.1."
    assert [(s.cause, s.effect, s.evidence_id) for s in out.reasoning.causal_chain] == [
        ("missing AUTH_SECRET", "auth service crash", "c1"),
        ("deploy v2.3.1", "missing AUTH_SECRET", "c2"),
    ]
    assert out.sources == ["causal"]
    assert out.follow_ups[0] == "What else did deploy v2.3.1 lead to?"


def test_downstream_chain_reads_as_led_to() -> None:
    answer, _, _ = run("What did deploy v2.3.1 lead to?", causal=CHAIN)
    assert answer == "Deploy v2.3.1 led to missing AUTH_SECRET, which led to auth service crash."


def test_timeline_in_order_with_dates() -> None:
    plan = rule_classify("What happened on January 7th?", REF)
    out = rule_synthesise("What happened on January 7th?", plan, Execution(results={"temporal": EVENTS}), REF)
    assert out.answer == (
        "On 2026-01-07 14:00 UTC: Deployment v2.3.1 started. On 2026-01-07 14:05 UTC: Auth service crashed."
    )
    assert out.reasoning.temporal_context is not None
    assert [e.id for e in out.reasoning.temporal_context.events] == ["e1", "e2"]


def test_only_the_facts_that_hold_now() -> None:
    answer, _, sources = run("What is Alice working on?", entity=FACTS)
    assert "Auth Service" in answer
    assert "Payment Service" not in answer
    assert sources == ["entity"]


def test_facts_of_the_asked_about_time() -> None:
    answer, _, _ = run("What was Alice working on in 2024?", entity=FACTS)
    assert "Payment Service" in answer
    assert "Auth Service" not in answer


def test_multi_graph_answer_puts_causes_first_and_is_more_confident() -> None:
    query = "Why did the auth service crash after Tuesday's deploy?"
    both, conf_both, sources = run(query, causal=CHAIN, temporal=EVENTS)
    assert both.startswith("Auth service crash because missing AUTH_SECRET")
    assert "On 2026-01-07 14:00 UTC: Deployment v2.3.1 started." in both
    assert sources == ["causal", "temporal"]
    _, conf_one, _ = run(query, causal=CHAIN)
    assert conf_both > conf_one


def test_semantic_matches_are_quoted() -> None:
    """Found by meaning, sharing no word with the question: quoted as stored."""
    memories = [Evidence("m1", "Sessions live in Redis for 15 minutes.", "semantic", "memory", 0.8)]
    answer, conf, sources = run("What do we know about caching?", semantic=memories)
    assert answer == "Stored memories: \u201cSessions live in Redis for 15 minutes.\u201d."
    assert sources == ["semantic"] and 0 < conf < 1


def test_a_memory_saying_what_is_asked_answers_in_its_own_words() -> None:
    memories = [Evidence("m1", "We cache sessions in Redis for 15 minutes.", "semantic", "memory", 0.8)]
    answer, _, _ = run("What do we know about caching?", semantic=memories)
    assert answer == "We cache sessions in Redis for 15 minutes."


def test_no_evidence_is_an_honest_nothing() -> None:
    answer, conf, sources = run("Why did the build fail?", causal=[])
    assert (answer, conf, sources) == (NOTHING_STORED, 0.0, [])


def test_missing_graphs_are_named_in_the_answer_and_lower_confidence() -> None:
    plan = rule_classify("Why did the auth service crash last week?", REF)
    full = rule_synthesise("q", plan, Execution(results={"causal": CHAIN, "temporal": EVENTS}), REF)
    part = rule_synthesise("q", plan, Execution(results={"causal": CHAIN}, timed_out=["temporal"]), REF)
    assert "the temporal graph timed out" in part.answer
    assert part.confidence < full.confidence
    none = rule_synthesise("q", plan, Execution(failed={"causal": "boom"}, timed_out=["temporal"]), REF)
    assert none.answer.startswith(NOTHING_STORED) and "the causal graph failed" in none.answer


def test_malformed_evidence_does_not_break_the_answer() -> None:
    odd = [
        Evidence("x1", "", "causal", "cause", 2.5, cause=None, effect=None),
        Evidence("x2", "Event with a bad date", "temporal", "event", -1.0, at="not a date"),
        Evidence("x3", "fact without parts", "entity", "fact", 0.5, at="yesterday-ish"),
        Evidence("x2", "duplicate id, lower score", "temporal", "event", -2.0, at="2026-01-01"),
    ]
    plan = rule_classify("Why did it break last week?", REF)
    out = rule_synthesise(
        "Why did it break last week?", plan, Execution(results={"causal": odd[:1], "temporal": odd[1:]}), REF
    )
    assert 0.0 <= out.confidence <= 1.0
    assert "On not a date: Event with a bad date." in out.answer
    assert "duplicate id" not in out.answer


# --- read as a user reads them: answers found wrong on a held-out set (bench/data/answers_heldout.yaml)


def fact(id_: str, subject: str, predicate: str, obj: str, at: str) -> Evidence:
    text = f"{subject} {predicate} {obj}"
    return Evidence(id_, text, "entity", "fact", 0.9, at=at, subject=subject, predicate=predicate, object=obj)


def test_a_question_naming_a_predicate_gets_only_those_facts() -> None:
    facts = [
        fact("f1", "Priya", "lives_in", "Lisbon", "2024-03-01T00:00:00.000000Z"),
        fact("f2", "Priya", "reports_to", "Omar Haddad", "2026-01-01T00:00:00.000000Z"),
    ]
    answer, _, _ = run("Where does Priya live?", entity=facts)
    assert answer.startswith("Priya lives in Lisbon") and "Omar" not in answer


def test_an_inflected_verb_meets_the_question_s_own() -> None:
    """ "play" asked, "plays" told: the sentence that says it answers, not an unrelated fact."""
    told = [
        Evidence("m1", "Mr. Okafor: Since January Yuki plays the viola.", "entity", "memory", 0.9),
        Evidence("m2", "Mr. Okafor: Daniel joined the school choir.", "entity", "memory", 0.5),
    ]
    member = fact("f1", "Yuki", "member_of", "school orchestra", "2025-09-01T00:00:00.000000Z")
    answer, _, _ = run("What instrument does Yuki play?", entity=[*told, member])
    assert "Yuki plays the viola" in answer and "member" not in answer and "choir" not in answer


def test_an_event_s_date_is_said_once() -> None:
    arrived = Evidence(
        "e1", "The Aurora arrived in Singapore on May 19.", "temporal", "event", 0.9, at="2026-05-19T00:00:00.000000Z"
    )
    answer, _, _ = run("When did the Aurora arrive in Singapore?", temporal=[arrived])
    assert answer == "The Aurora arrived in Singapore on 2026-05-19."


def test_an_effect_told_with_its_cause_is_not_given_the_cause_again() -> None:
    link = Evidence(
        "c1",
        "The Aurora was delayed at Suez due to a sandstorm.",
        "causal",
        "cause",
        0.9,
        cause="a sandstorm",
        effect="The Aurora was delayed at Suez due to a sandstorm.",
    )
    answer, _, _ = run("Why was the Aurora delayed?", causal=[link])
    assert answer == "The Aurora was delayed at Suez due to a sandstorm."


def test_a_why_question_sharing_only_a_common_verb_is_not_explained() -> None:
    """ "stop" is in both, "wind turbine" in none: Line 3's cause is not the turbine's."""
    link = Evidence("c1", "", "causal", "cause", 0.9, cause="a conveyor belt snapped", effect="Line 3 stopped at 06:40")
    told = [Evidence("m1", "Line 3 stopped at 06:40 because a conveyor belt snapped.", "entity", "memory", 0.9)]
    answer, _, _ = run("Why did the wind turbine stop?", causal=[link], entity=told)
    assert "conveyor" not in answer
    answer, _, _ = run("Why did Line 3 stop?", causal=[link], entity=told)
    assert "conveyor belt snapped" in answer


def test_who_heads_is_answered_by_who_leads() -> None:
    told = [Evidence("m1", "Lena Vogt is the head of infrastructure.", "entity", "memory", 0.95)]
    leads = fact("f1", "Omar Haddad", "leads", "infrastructure", "2025-10-01T00:00:00.000000Z")
    query = "Who is the head of infrastructure?"
    plan = rule_classify(query, REF, known_names=["infrastructure"])  # as the service resolves it
    out = rule_synthesise(query, plan, Execution(results={"entity": [*told, leads]}), REF)
    assert out.answer == "Omar Haddad leads infrastructure."
