"""What `remember` understands (issue 25), through the MCP client over stdio: the issue's own
sentences told in plain words, and the graph read back with get_facts, get_entity and
query_timeline."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tools.memory.conftest import Memory

pytestmark = pytest.mark.anyio

REF = "2026-01-14T12:00:00Z"  # a Wednesday


async def remember(mem: Memory, content: str, context: str | None = None, at: str = REF) -> dict[str, Any]:
    args: dict[str, Any] = {"content": content, "reference_time": at}
    if context is not None:
        args["context"] = context
    return await mem.ok("remember", **args)


async def current(mem: Memory, subject: str) -> list[tuple[str, str, str | None, str | None]]:
    facts = (await mem.ok("get_facts", subject=subject))["facts"]
    return sorted((f["predicate"], f["object"], f["valid_from"], f["valid_to"]) for f in facts)


async def names(mem: Memory, ids: list[str]) -> dict[str, str | None]:
    out = {}
    for entity_id in ids:
        entity = (await mem.ok("get_entity", entity_id=entity_id))["entity"]
        out[entity["name"]] = entity["type"]
    return out


async def test_a_stated_start_is_the_facts_validity_and_no_date_enters_a_name(mem: Memory) -> None:
    out = await remember(mem, "Since June 2025 Alice works on the Auth Service.")
    assert await names(mem, out["entities_created"]) == {"Alice": "Person", "Auth Service": "Service"}
    assert await current(mem, "Alice") == [("works_on", "Auth Service", "2025-06-01T00:00:00.000000Z", None)]
    joined = await remember(mem, "Dana joined the payments team on day 0.")
    assert await names(mem, joined["entities_created"]) == {"Dana": "Person", "payments team": "Team"}
    now = await remember(mem, "Priya works on the data pipeline now.")
    assert await names(mem, now["entities_created"]) == {"Priya": "Person", "data pipeline": "Service"}


async def test_a_single_valued_predicate_closes_the_value_another_verb_stated(mem: Memory) -> None:
    joined = await remember(mem, "Bob joined the Search team.", at="2025-09-01T09:00:00Z")
    moved = await remember(mem, "Bob works on the Billing team.")
    assert joined["facts_added"] and moved["facts_invalidated"] == joined["facts_added"]
    assert [f[:2] for f in await current(mem, "Bob")] == [("member_of", "Billing team")]


async def test_roles_lists_and_ranges(mem: Memory) -> None:
    await remember(mem, "Alice is the tech lead of the Platform team.")
    assert [f[:2] for f in await current(mem, "Alice")] == [("leads", "Platform team")]
    both = await remember(mem, "The checkout service depends on Kafka and Redis.")
    assert len(both["facts_added"]) == 2
    assert [f[:2] for f in await current(mem, "checkout service")] == [("depends_on", "Kafka"), ("depends_on", "Redis")]
    await remember(mem, "Carol replaced Dave as manager of the Growth team.")
    assert [f[:2] for f in await current(mem, "Carol")] == [("leads", "Growth team")]
    await remember(mem, "From January 2024 until May 2025 Bob worked at Initech.")
    facts = (await mem.ok("get_facts", subject="Bob", include_history=True))["facts"]
    assert [(f["predicate"], f["object"], f["valid_from"], f["valid_to"]) for f in facts] == [
        ("works_at", "Initech", "2024-01-01T00:00:00.000000Z", "2025-06-01T00:00:00.000000Z")
    ]


async def test_an_event_is_logged_at_the_time_of_day_its_sentence_states(mem: Memory) -> None:
    out = await remember(mem, "Yesterday at 14:30 Sam restarted the database cluster.")
    timeline = await mem.ok("query_timeline", **{"from": "2026-01-13", "to": "2026-01-13"})
    logged = [
        i["event"] for i in timeline["items"] if i["kind"] == "event" and i["event"]["id"] in out["events_logged"]
    ]
    assert [(e["occurred_at"], sorted(e["entities"])) for e in logged] == [
        ("2026-01-13T14:30:00.000000Z", ["Sam", "database cluster"])
    ]


async def test_i_is_the_speaker_and_she_the_person_named_before(mem: Memory) -> None:
    await remember(mem, "I moved to Utrecht last week. My manager is Olga.", context="Hannah")
    assert await current(mem, "Hannah") == [
        ("lives_in", "Utrecht", "2026-01-05T00:00:00.000000Z", None),
        ("reports_to", "Olga", REF.replace("Z", ".000000Z"), None),
    ]
    await remember(mem, "Fatima joined the Compliance team in 2024. She leads the audit project.")
    assert [f[:2] for f in await current(mem, "Fatima")] == [
        ("leads", "audit project"),
        ("member_of", "Compliance team"),
    ]


async def test_causes_from_because_and_passive_and_none_from_a_denial(mem: Memory) -> None:
    both = await remember(
        mem, "The auth service crashed because the certificate expired and the retry queue filled up."
    )
    assert len(both["causal_links_added"]) == 2
    chain = str(await mem.ok("get_causal_chain", event="The auth service crashed", direction="upstream"))
    assert "the certificate expired" in chain and "the retry queue filled up" in chain
    broken = await remember(mem, "The login page was broken by Tom's commit.")
    assert len(broken["causal_links_added"]) == 1
    denied = await remember(mem, "The outage was not caused by the config push.")
    assert denied["causal_links_added"] == [] and denied["facts_added"] == []


@pytest.mark.parametrize(
    "content",
    [
        "Der Server ist gestern abgestürzt und niemand hat es bemerkt.",
        "See https://status.example.org/incidents/4411 for details.",
        "def retry(fn): return fn() if ok else None",
        "| service | owner | tier |\n| ledger | payments | 1 |",
        "🎉🎉 shipped!!! 🚀",
        "2026-01-12 03:14:07 ERROR worker-3 timeout after 30000ms",
    ],
)
async def test_text_that_is_not_english_prose_creates_no_entity(mem: Memory, content: str) -> None:
    out = await remember(mem, content)
    assert (out["entities_created"], out["facts_added"], out["causal_links_added"]) == ([], [], [])
    found = await mem.ok("search_semantic", query=content, limit=3)
    assert found  # stored and searchable all the same


async def test_a_long_mixed_memory_names_only_what_its_sentences_name(mem: Memory) -> None:
    # As long as remember takes (16,384 characters); bench/quality/extraction_bench.py times 20,000.
    block = (
        "On Monday at 09:30 Ana restarted the billing API because the cache was cold. "
        "The Search team depends on Elasticsearch and Redis. Since March 2025 Tom works on the data pipeline.\n"
        "| col | val |\n| a | 1 |\ndef f(x): return x * 2\n"
        "See https://example.org/a/b?c=d for the runbook. 日本語のテキストです。 🎉\n"
    )
    out = await remember(mem, (block * 80)[:16_000])
    assert set(await names(mem, out["entities_created"])) <= {
        "Ana",
        "billing API",
        "Search team",
        "Elasticsearch",
        "Redis",
        "Tom",
        "data pipeline",
    }


async def test_a_fact_that_ended_before_it_was_told_is_written_with_its_end(mem: Memory) -> None:
    out = await remember(mem, "Until December 2025 Lena led the Support team.")
    assert len(out["facts_added"]) == 1
    facts = (await mem.ok("get_facts", subject="Lena", include_history=True))["facts"]
    assert [(f["predicate"], f["object"], f["valid_to"], f["current"]) for f in facts] == [
        ("leads", "Support team", "2026-01-01T00:00:00.000000Z", False)
    ]


async def history(mem: Memory, subject: str) -> list[tuple[str, str, str | None, str | None]]:
    facts = (await mem.ok("get_facts", subject=subject, include_history=True))["facts"]
    return sorted((f["predicate"], f["object"], f["valid_from"], f["valid_to"]) for f in facts)


async def test_the_one_replaced_loses_the_role_whatever_verb_gave_it(mem: Memory) -> None:
    first = await remember(mem, "Dave is the manager of the Growth team.", at="2025-03-02T09:00:00Z")
    replaced = await remember(mem, "Carol replaced Dave as manager of the Growth team in October 2025.")
    assert replaced["facts_invalidated"] == first["facts_added"]
    assert await current(mem, "Dave") == []
    assert await history(mem, "Dave") == [
        ("leads", "Growth team", "2025-03-02T09:00:00.000000Z", "2025-10-01T00:00:00.000000Z")
    ]
    assert await current(mem, "Carol") == [("leads", "Growth team", "2025-10-01T00:00:00.000000Z", None)]
    # "took over ... from" says the same of the one before.
    await remember(mem, "Mirela leads the documentation team.", at="2025-01-06T09:00:00Z")
    await remember(mem, "Ayaan took over the documentation team from Mirela in June.")
    assert await current(mem, "Mirela") == []
    assert await current(mem, "Ayaan") == [("leads", "documentation team", "2025-06-01T00:00:00.000000Z", None)]


async def test_leaving_and_no_longer_close_what_held(mem: Memory) -> None:
    joined = await remember(mem, "Bob joined the Search team.", at="2025-02-03T09:00:00Z")
    left = await remember(mem, "Bob left the Search team in December.")
    assert left["facts_invalidated"] == joined["facts_added"] and left["facts_added"] == []
    assert await current(mem, "Bob") == []
    assert await history(mem, "Bob") == [
        ("member_of", "Search team", "2025-02-03T09:00:00.000000Z", "2025-12-01T00:00:00.000000Z")
    ]
    await remember(mem, "Kai lives in Oslo.", at="2024-05-01T09:00:00Z")
    gone = await remember(mem, "Kai does not live in Oslo anymore.")
    assert len(gone["facts_invalidated"]) == 1 and await current(mem, "Kai") == []
    # Nothing held: nothing is closed, and nothing is added.
    never = await remember(mem, "Rafferty quit Skyline Aero in December.")
    assert (never["facts_added"], never["facts_invalidated"]) == ([], [])


async def test_a_future_event_is_logged_at_the_time_it_will_happen(mem: Memory) -> None:
    out = await remember(mem, "Next Tuesday we will deploy the auth service. The launch is on 3 March.")
    timeline = await mem.ok("query_timeline", **{"from": "2026-01-15", "to": "2026-12-31"})
    logged = sorted(
        i["event"]["occurred_at"]
        for i in timeline["items"]
        if i["kind"] == "event" and i["event"]["id"] in out["events_logged"]
    )
    assert logged == ["2026-01-20T00:00:00.000000Z", "2026-03-03T00:00:00.000000Z"]


async def test_a_first_name_resolves_to_the_only_known_person_of_that_name(mem: Memory) -> None:
    first = await remember(mem, "Alice Chen leads the Platform team.", at="2025-03-02T09:00:00Z")
    alice = {v: k for k, v in (await names(mem, first["entities_created"])).items()}
    assert alice == {"Person": "Alice Chen", "Team": "Platform team"}
    later = await remember(mem, "Alice moved to the Billing team in May.")
    assert "Alice" not in await names(mem, later["entities_created"])
    assert await current(mem, "Alice Chen") == [
        ("leads", "Platform team", "2025-03-02T09:00:00.000000Z", None),
        ("member_of", "Billing team", "2025-05-01T00:00:00.000000Z", None),
    ]
    # Two people of that first name: neither is meant, a new one is made.
    await remember(mem, "Sam Ortiz and Sam Lee joined the Search team.", at="2025-03-02T09:00:00Z")
    ambiguous = await remember(mem, "Sam restarted the database cluster.")
    assert "Sam" in await names(mem, ambiguous["entities_created"])


async def test_a_head_role_and_a_cause_told_before_so(mem: Memory) -> None:
    first = await remember(mem, "Bastien is the head chef of Maison Lune.", at="2025-09-02T09:00:00Z")
    assert len(first["facts_added"]) == 1
    # The parser reads the unfamiliar "Odile" as an adverb: still the one who replaced him.
    told = await remember(mem, "Odile replaced Bastien as head chef of Maison Lune in January.")
    assert told["facts_invalidated"] == first["facts_added"]
    assert await current(mem, "Odile") == [("leads", "Maison Lune", "2026-01-01T00:00:00.000000Z", None)]
    chain = await remember(
        mem, "The walk-in freezer failed because its compressor overheated, so we threw out the custard."
    )
    assert len(chain["causal_links_added"]) == 2
    upstream = await mem.ok("get_causal_chain", event="we threw out the custard", direction="upstream")
    texts = {str(node.get("text")) for node in upstream["nodes"]}
    # The freezer's failure caused it, and the compressor the failure: not one cause holding both.
    assert {"The walk-in freezer failed", "its compressor overheated"} <= texts
    assert not any("because" in text for text in texts)
