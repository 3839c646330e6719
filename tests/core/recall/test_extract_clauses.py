"""Rule-based extraction for remember (issue 25), read from the parse: a time belongs to the clause
it hangs on, causes lose the time words they end with, and names, roles and appointments said
in ways the first rules missed. Sentences and names here are used by no gold set."""

from __future__ import annotations

from datetime import UTC, datetime

from polyg.core.memory.extract_memory import extract

REF = datetime(2026, 3, 12, 10, 0, tzinfo=UTC)  # a Thursday


def facts(text: str, speaker: str | None = None) -> list[tuple[str, str, str, str | None, str | None]]:
    out = extract(text, REF, (), speaker)
    return sorted(
        (
            f.subject,
            f.predicate,
            f.object,
            f.valid_from.date().isoformat() if f.valid_from else None,
            f.valid_to.date().isoformat() if f.valid_to else None,
        )
        for f in out.facts
    )


def entities(text: str) -> dict[str, str | None]:
    return {e.name: e.type for e in extract(text, REF).entities}


def test_a_time_in_one_clause_is_not_the_validity_of_a_fact_in_another() -> None:
    assert facts("Priyanka works at Lumen Bank and has volunteered at the Riverside Shelter since May.") == [
        ("Priyanka", "works_at", "Lumen Bank", None, None)
    ]
    # Each clause keeps its own time; the span of the second hides not the first's date.
    told = "I moved to Hull in 2020 and have served on the Harbour Board since 2022."
    assert facts(told, "Gareth") == [
        ("Gareth", "lives_in", "Hull", "2020-01-01", None),
        ("Gareth", "member_of", "Harbour Board", "2022-01-01", None),
    ]
    assert [e.occurred_at.date().isoformat() for e in extract(told, REF, (), "Gareth").events] == ["2020-01-01"]


def test_a_cause_loses_the_time_words_it_ends_with_and_its_event_is_the_dated_one() -> None:
    out = extract("The invoices went out late because the billing job failed on Tuesday.", REF)
    assert [(c.cause, c.effect) for c in out.causes] == [("the billing job failed", "The invoices went out late")]
    assert [(e.description, e.occurred_at) for e in out.events] == [
        ("the billing job failed", datetime(2026, 3, 10, tzinfo=UTC))
    ]
    # "after the robot broke down" is an event, not a time: the cause keeps its words.
    late = extract("Deliveries slowed after the packing robot broke down.", REF).causes
    assert [(c.cause, c.effect) for c in late] == [("the packing robot broke down", "Deliveries slowed")]


def test_a_which_clause_is_a_link_of_its_own() -> None:
    out = extract("The build broke because a package was deleted, which delayed the beta.", REF)
    # The parse hangs "which delayed" on the deletion: its own link, in no other phrase.
    assert sorted((c.cause, c.effect) for c in out.causes) == [
        ("a package was deleted", "The build broke"),
        ("a package was deleted", "the beta"),
    ]
    out = extract("The nightly job crashed because the disk filled up, and the report was late.", REF)
    assert [(c.cause, c.effect) for c in out.causes][:1] == [("the disk filled up", "The nightly job crashed")]
    hung = extract("The import stalled because a lock was held, which blocked the payroll run.", REF).causes
    assert all("which" not in c.cause and "which" not in c.effect for c in hung)


def test_titles_purposes_and_mistagged_heads_in_names() -> None:
    assert entities("Prof Ingrid Solberg chairs the Ethics Board.") == {
        "Ingrid Solberg": "Person",
        "Ethics Board": "Team",
    }
    assert facts("The ticketing portal depends on the mapping API and the billing gateway.") == [
        ("ticketing portal", "depends_on", "billing gateway", None, None),
        ("ticketing portal", "depends_on", "mapping API", None, None),
    ]


def test_roles_at_an_organisation_and_appointments() -> None:
    assert facts("Jonah Pryce is the finance director at Wexford Shipping.") == [
        ("Jonah Pryce", "works_at", "Wexford Shipping", None, None)
    ]
    assert facts("Anouk joined Brightwater Freight as a planner in April 2024.") == [
        ("Anouk", "works_at", "Brightwater Freight", "2024-04-01", None)
    ]
    assert facts("Tobias was promoted to head of the Claims team in October.") == [
        ("Tobias", "leads", "Claims team", "2025-10-01", None)
    ]
    assert facts("Rukmini was elected to the Harbour Board in 2024.") == [
        ("Rukmini", "member_of", "Harbour Board", "2024-01-01", None)
    ]
    assert facts("Hamid was appointed chair of the Audit Committee.") == [
        ("Hamid", "leads", "Audit Committee", None, None)
    ]


def test_a_person_moving_to_an_untyped_name_moves_to_a_place() -> None:
    out = extract("Selma leads the Docs team. She moved to Kirkenes last year.", REF)
    assert {e.name: e.type for e in out.entities}["Kirkenes"] == "Place"
    assert ("Selma", "lives_in", "Kirkenes") in [(f.subject, f.predicate, f.object) for f in out.facts]
    # The tagger reads this town as a person's name: a person does not move to a person.
    hull = extract("Selma leads the Docs team. She moved to Hull last year.", REF)
    assert {e.name: e.type for e in hull.entities}["Hull"] == "Place"
    assert ("Selma", "lives_in", "Hull") in [(f.subject, f.predicate, f.object) for f in hull.facts]


def test_a_cause_keeps_the_name_before_its_time_words() -> None:
    # "Cardiff" stands before "last month": only a preposition opens a time phrase.
    out = extract("We moved to Cardiff last month because Sam got a job at the university.", REF, (), "Tom")
    assert [(c.cause, c.effect) for c in out.causes] == [("Sam got a job at the university", "We moved to Cardiff")]


def test_a_pupils_school_and_a_school_year_that_is_no_date() -> None:
    assert facts("My son Idris started year 2 at Larkfield Primary in September 2025.", "Oriel") == [
        ("Idris", "studies_at", "Larkfield Primary", "2025-09-01", None)
    ]
    assert [
        e.occurred_at.date().isoformat() for e in extract("Idris started year 2 in September 2025.", REF).events
    ] == ["2025-09-01"]
    assert facts("Mina is a student at Brightwater College.") == [
        ("Mina", "studies_at", "Brightwater College", None, None)
    ]
    # Starting at a company or going to a market is no schooling.
    assert facts("Priya went to the Harbour Market.") == []
    assert [f[1] for f in facts("I started at Umbrella Labs two weeks ago.", "Nadia")] == []


def test_a_because_clause_after_another_is_its_cause_a_chain() -> None:
    out = extract("The kiln cracked because the vent jammed, because nobody had cleaned the flue.", REF)
    assert [(c.cause, c.effect) for c in out.causes] == [
        ("the vent jammed", "The kiln cracked"),
        ("nobody had cleaned the flue", "the vent jammed"),
    ]
    passive = extract("The orchard was wrecked by a storm, so the cider press sat idle.", REF)
    assert [(c.cause, c.effect) for c in passive.causes] == [
        ("a storm", "The orchard was wrecked"),
        ("The orchard was wrecked by a storm", "the cider press sat idle"),
    ]


def test_jobs_said_by_what_one_does_and_where() -> None:
    assert facts("Captain Eirlys Pryor directs the Harbourlight Players.") == [
        ("Eirlys Pryor", "leads", "Harbourlight Players", None, None)
    ]
    assert facts("Cathal Brennan drives for Quickhop Couriers.") == [
        ("Cathal Brennan", "works_at", "Quickhop Couriers", None, None)
    ]
    out = extract("Isaura Penhale is the head librarian at Millbrook Library.", REF)
    assert [(f.subject, f.predicate, f.object) for f in out.facts] == [
        ("Isaura Penhale", "works_at", "Millbrook Library")
    ]
    assert {e.name: e.type for e in out.entities} == {"Isaura Penhale": "Person", "Millbrook Library": "Organisation"}


def test_a_person_moving_to_a_company_takes_a_job_there() -> None:
    """The tagger's company is trusted after "moved to" (it also reads some unfamiliar towns
    so: "moved to Stellenbosch" is a job too, a miss left rather than a home at Google)."""
    assert facts("Sam moved to Google last year.") == [("Sam", "works_at", "Google", "2025-01-01", None)]
    assert [f[1] for f in facts("I moved to Microsoft in 2023.", "Dana")] == ["works_at"]
    # A company named with its head noun is a job; "we" moving is a team's migration.
    assert [f[1] for f in facts("Rasmus moved to Fjord Mutual in 2024.")] == ["works_at"]
    assert facts("We moved to Kubernetes.", "Tom") == []


def test_a_move_the_sentence_says_is_a_homes_is_a_home_whatever_the_tagger_made_of_the_town() -> None:
    """The small model calls some towns companies after "moved to" ("Dundee", "Exeter"): a move
    made for a job, by a household, or of a house is a home all the same (the town a place)."""
    told = "We moved to Dundee last month because Ines got a job at the hospital."
    assert facts(told, "Oskar") == [("Oskar", "lives_in", "Dundee", "2026-02-01", None)]
    assert {e.name: e.type for e in extract(told, REF, (), "Oskar").entities}["Dundee"] == "Place"
    assert [f[1:3] for f in facts("My husband and I moved to Exeter in 2024.", "Wren")] == [("lives_in", "Exeter")]
    assert [f[1:3] for f in facts("We moved to Tampere with the kids.", "Wren")] == [("lives_in", "Tampere")]
    assert [f[1:3] for f in facts("We moved house to Coventry.", "Wren")] == [("lives_in", "Coventry")]
    # Without such words a team's move stays a migration.
    assert facts("We moved to Quillstack because the old scripts kept failing.", "Wren") == []


def test_running_something_on_a_street_is_not_a_system_running_on_it() -> None:
    # "runs on" states a system's platform only without an object of its own.
    assert facts("I run a bakery on Quay Street.", "Wren") == []
    assert {e.name: e.type for e in extract("I run a bakery on Quay Street.", REF, (), "Wren").entities}.get(
        "Wren"
    ) != "Service"
    assert facts("The ledger service runs on Nomad.") == [("ledger service", "runs_on", "Nomad", None, None)]


def test_a_system_moved_somewhere_is_a_migration_not_a_job() -> None:
    # No works_at (it stated one once); where the system runs now, as a migration says.
    assert facts("The invoicing service moved to Kubernetes.") == [
        ("invoicing service", "runs_on", "Kubernetes", None, None)
    ]
