"""What `remember` understands and `recall` answers with it (issue 25), through the MCP client over
stdio: a pupil's school, a why-question whose cause was told with the day it happened, and a
time in one clause kept out of another clause's fact. Names used by no answer or gold set."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tools.memory.conftest import Memory

pytestmark = pytest.mark.anyio

REF = "2026-01-14T12:00:00Z"  # a Wednesday


async def remember(mem: Memory, content: str, at: str = REF, context: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"content": content, "reference_time": at}
    if context is not None:
        args["context"] = context
    return await mem.ok("remember", **args)


async def test_a_pupils_school_is_a_fact_a_new_school_closes_and_recall_answers_with(mem: Memory) -> None:
    told = await remember(
        mem, "My son Idris started year 2 at Larkfield Primary in September 2025.", "2025-09-02T08:00:00Z", "Oriel"
    )
    assert told["facts_added"]
    facts = (await mem.ok("get_facts", subject="Idris"))["facts"]
    assert [(f["predicate"], f["object"], f["valid_from"]) for f in facts] == [
        ("studies_at", "Larkfield Primary", "2025-09-01T00:00:00.000000Z")
    ]
    # "year 2" is the school year, not a date: the event is in September.
    timeline = await mem.ok("query_timeline", **{"from": "2025-01-01", "to": "2025-12-31"})
    logged = [
        i["event"] for i in timeline["items"] if i["kind"] == "event" and i["event"]["id"] in told["events_logged"]
    ]
    assert [e["occurred_at"][:10] for e in logged] == ["2025-09-01"]
    asked = await mem.ok("recall", query="Which school does Idris attend?", reference_time=REF)
    assert "Larkfield Primary" in asked["answer"]
    assert told["facts_added"][0] in {e["id"] for e in asked["evidence"]}
    moved = await remember(mem, "Idris goes to Fernhill Academy now.", "2026-01-10T08:00:00Z", "Oriel")
    assert moved["facts_invalidated"] == told["facts_added"]
    now = await mem.ok("recall", query="Which school does Idris attend?", reference_time=REF)
    assert "Fernhill Academy" in now["answer"] and "Larkfield" not in now["answer"]


async def test_why_says_the_chain_through_a_cause_told_with_its_day(mem: Memory) -> None:
    broke = await remember(mem, "The checkout page broke because the payment deploy failed on Tuesday.")
    failed = await remember(mem, "The payment deploy failed because the signing key had expired.")
    why = await mem.ok("recall", query="Why did the checkout page break?", reference_time=REF, include_reasoning=True)
    answer = why["answer"]
    assert "because the payment deploy failed, because the signing key had expired" in answer, answer
    assert "Tuesday" not in answer
    chain = why["reasoning"]["causal_chain"]
    # One node for the deploy's failure, however each memory capitalised it.
    assert [(c["cause"].lower(), c["effect"].lower()) for c in chain] == [
        ("the payment deploy failed", "the checkout page broke"),
        ("the signing key had expired", "the payment deploy failed"),
    ]
    cited = {e["id"] for e in why["evidence"]}
    assert {c["evidence_id"] for c in chain} <= cited
    assert set(broke["causal_links_added"]) | set(failed["causal_links_added"]) <= cited
    # The cause is the dated event the first memory logged (Tuesday), found by its words.
    found = await mem.ok("get_causal_chain", event="the payment deploy failed")
    assert found["start"]["id"] in broke["events_logged"]
    assert found["start"]["occurred_at"].startswith("2026-01-13")


async def test_a_time_in_another_clause_is_not_a_facts_start(mem: Memory) -> None:
    await remember(mem, "Priyanka works at Lumen Bank and has volunteered at the Riverside Shelter since May.")
    facts = (await mem.ok("get_facts", subject="Priyanka"))["facts"]
    # Stated without a start: valid from when it was said, not from May.
    assert [(f["predicate"], f["object"], f["valid_from"][:10]) for f in facts] == [
        ("works_at", "Lumen Bank", "2026-01-14")
    ]


async def test_first_person_told_by_a_speaker_reads_in_the_third_person_with_its_verb_agreeing(mem: Memory) -> None:
    speaker = "Dr. Halvard Brekke"
    told = {
        "I run the pharmacy on Quayside Lane.": ("What does Halvard Brekke run?", "runs the pharmacy"),
        "I am allergic to penicillin.": ("What is Halvard Brekke allergic to?", "is allergic to penicillin"),
        "I have three allotments by the river.": ("How many allotments does Halvard Brekke have?", "has three"),
        "I was a ferry pilot before pharmacy school.": ("What did Halvard Brekke do before pharmacy school?", "was a"),
        "I can repair old clocks.": ("What can Halvard Brekke repair?", "can repair old clocks"),
    }
    for sentence in told:
        await remember(mem, sentence, context=speaker)
    for question, said in told.values():
        answer = (await mem.ok("recall", query=question, reference_time=REF))["answer"]
        assert f"{speaker} {said}" in answer, (question, answer)


async def test_a_question_about_now_answered_by_two_memories_leads_with_the_newer(mem: Memory) -> None:
    await remember(mem, "Rosalind plays the oboe in the county wind band.", "2024-03-01T09:00:00Z")
    await remember(mem, "Rosalind plays the bassoon in the county wind band now.", "2025-09-01T09:00:00Z")
    answer = (await mem.ok("recall", query="What instrument does Rosalind play?", reference_time=REF))["answer"]
    assert answer.startswith("Rosalind plays the bassoon"), answer
    # The older state may follow, said as the past it is.
    if "oboe" in answer:
        assert answer.index("Earlier") < answer.index("oboe"), answer
    past = (await mem.ok("recall", query="What did Rosalind play in 2024?", reference_time=REF))["answer"]
    assert "oboe" in past, past


async def test_a_household_moving_for_a_job_moves_home_to_a_town_the_tagger_calls_a_company(mem: Memory) -> None:
    first = await remember(mem, "I live in Harrogate with my partner Ines.", "2023-02-01T09:00:00Z", "Oskar")
    moved = await remember(
        mem, "We moved to Dundee last month because Ines got a job at the hospital.", "2025-04-20T09:00:00Z", "Oskar"
    )
    assert moved["facts_invalidated"] == first["facts_added"]
    facts = (await mem.ok("get_facts", subject="Oskar"))["facts"]
    assert [(f["predicate"], f["object"]) for f in facts] == [("lives_in", "Dundee")]
    answer = (await mem.ok("recall", query="Where does Oskar live?", reference_time=REF))["answer"]
    assert "Dundee" in answer and "Harrogate" not in answer, answer
