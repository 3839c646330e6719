"""What a user reads from `recall` when a question calls an entity as a memory did, over the MCP
client (stdio): a first name means the entity `remember` merged it into (the one rule of
polyg.core.memory.aliases, on write and on read), unless two known names start with it; an
answer said from a memory alone does not lead with who told it when its sentence reads alone,
nor says again what a fact said."""

from __future__ import annotations

import pytest

from tests.tools.memory.conftest import SAMS_WEEK, Memory, ask, tell

pytestmark = pytest.mark.anyio
SAM = [*SAMS_WEEK, "The search service runs on the Cedar cluster."]


async def test_a_first_name_in_a_question_means_the_entity_remember_merged_it_into(mem: Memory) -> None:
    await tell(mem, SAM)
    lena = (await mem.ok("get_entity", name="Lena Fischer"))["entity"]["id"]
    facts = (await mem.ok("get_facts", subject="Lena Fischer"))["facts"]
    assert ("lives_in", "Vienna") in {(f["predicate"], f["object"]) for f in facts}  # merged on write

    out = await ask(mem, "Where does Lena live?")
    assert [(m["mention"], m["resolved"]) for m in out["classification"]["entities"]] == [("Lena", lena)]
    assert out["answer"] == "Lena Fischer lives in Vienna (since April 2026)."
    assert (await ask(mem, "Where does Lena Fischer live?"))["answer"] == out["answer"]


async def test_a_first_name_two_known_names_start_with_is_not_guessed(mem: Memory) -> None:
    # "Park" is also a place's head noun: still a name "Lena" may be short for.
    await tell(mem, ["Lena Fischer moved to Vienna in April 2026.", "Lena Park lives in Graz."])
    out = await ask(mem, "Where does Lena live?")
    assert [(m["mention"], m["resolved"]) for m in out["classification"]["entities"]] == [("Lena", None)]
    assert "Lena Fischer lives in Vienna" not in out["answer"]


async def test_an_answer_from_a_memory_alone_does_not_lead_with_its_speaker(mem: Memory) -> None:
    await tell(mem, SAM)
    teach = await ask(mem, "What does Marco teach?")
    assert teach["answer"] == "Marco teaches physics at the Danube Technical College."
    run = await ask(mem, "Where does the search service run?")
    assert run["answer"] == "The search service runs on the Cedar cluster."


async def test_a_system_called_without_its_head_noun_is_answered_by_its_fact_once(mem: Memory) -> None:
    await tell(mem, ["The ledger database runs on the Birch cluster."])
    out = await ask(mem, "What runs on Birch?")
    birch = (await mem.ok("get_entity", name="Birch cluster"))["entity"]["id"]
    assert [(m["mention"], m["resolved"]) for m in out["classification"]["entities"]] == [("Birch", birch)]
    # The memory's sentence says no more than the fact: it is not said after it.
    assert out["answer"] == "The ledger database runs on the Birch cluster (since 2026-07-01)."


async def test_a_first_name_asks_about_that_entitys_time_only(mem: Memory) -> None:
    await tell(mem, [*SAM, "On 3 April 2026 the platform team shipped the new gateway."])
    out = await ask(mem, "What did Lena do in April 2026?")
    assert "moved to Vienna" in out["answer"] and "gateway" not in out["answer"]
