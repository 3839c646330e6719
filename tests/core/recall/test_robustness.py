"""Any text is a valid query or memory: the rules never raise on it, and their outputs keep
their invariants (spans inside the text, a valid schema, confidences in range)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from polyg.core.memory.extract_memory import extract
from polyg.core.recall.classifier import rule_classify
from polyg.core.recall.evidence import Evidence
from polyg.core.recall.executor import Execution
from polyg.core.recall.model import ClassifierOutput
from polyg.core.recall.synthesiser import rule_synthesise
from polyg.core.text.mentions import find_mentions

REF = datetime(2026, 1, 14, 12, 0, tzinfo=UTC)
WORDS = st.sampled_from(
    "Why did the auth-service fail after Tuesday's deploy because of AUTH_SECRET ? . , : 's "
    "What happened last week in 2024 since Monday caused led to Alice Bob Root Cause Labs "
    "not never so after failed \" ' ( ) render() core/x.py between and from the 12th".split()
)
TEXT = st.one_of(st.text(max_size=200), st.lists(WORDS, max_size=30).map(" ".join))


@settings(max_examples=150, deadline=None)
@given(TEXT)
def test_classifier_takes_any_text(text: str) -> None:
    out = rule_classify(text, REF)
    assert ClassifierOutput.model_validate(out.model_dump()) == out
    assert 0.0 <= out.confidence <= 1.0
    assert (out.causal_direction is not None) == ("causal" in out.intents)
    for mention in find_mentions(text):
        assert text[mention.start : mention.end] == mention.text or mention.kind in ("quoted", "code")


@settings(max_examples=150, deadline=None)
@given(TEXT)
def test_extraction_takes_any_text(text: str) -> None:
    out = extract(text, REF)
    for cause in out.causes:
        assert cause.cause and cause.effect and cause.cause.lower() != cause.effect.lower()
        assert 0.0 < cause.confidence <= 1.0


@settings(max_examples=100, deadline=None)
@given(
    TEXT,
    st.lists(
        st.builds(
            Evidence,
            id=st.text(min_size=1, max_size=8),
            text=st.text(max_size=40),
            graph=st.sampled_from(["semantic", "temporal", "causal", "entity"]),
            kind=st.sampled_from(["memory", "event", "fact", "cause", "entity", "concept"]),
            score=st.floats(allow_nan=False, allow_infinity=False, min_value=-5, max_value=5),
            at=st.one_of(st.none(), st.text(max_size=20), st.just("2026-01-07T14:00:00.000000Z")),
            cause=st.one_of(st.none(), st.text(max_size=20)),
            effect=st.one_of(st.none(), st.text(max_size=20)),
        ),
        max_size=12,
    ),
)
def test_synthesiser_takes_any_evidence(query: str, evidence: list[Evidence]) -> None:
    plan = rule_classify(query, REF)
    out = rule_synthesise(query, plan, Execution(results={"semantic": evidence}), REF)
    assert 0.0 <= out.confidence <= 1.0
    assert out.answer
