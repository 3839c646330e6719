"""Rule-based extraction for remember on a fixed set of sentences."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from polyg.core.memory.extract_memory import ExtractedFact, extract

REF = datetime(2026, 1, 14, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("sentence", "cause", "effect"),
    [
        ("The deploy failed due to a missing env var.", "a missing env var", "The deploy failed"),
        ("The API was slow because the cache was cold.", "the cache was cold", "The API was slow"),
        ("A traffic spike caused connection-pool-exhaustion.", "A traffic spike", "connection-pool-exhaustion"),
        ("The config push led to a restart loop.", "The config push", "a restart loop"),
        ("The leak resulted in an OOM kill.", "The leak", "an OOM kill"),
        ("The disk filled up, so the backup stopped.", "The disk filled up", "the backup stopped"),
        ("After the DNS provider failed, checkout went down.", "the DNS provider failed", "checkout went down"),
        ("The outage was caused by a bad config push.", "a bad config push", "The outage"),
        ("Because the token expired, the sync job stopped.", "the token expired", "the sync job stopped"),
    ],
)
def test_causal_links(sentence: str, cause: str, effect: str) -> None:
    links = extract(sentence, REF).causes
    assert [(c.cause, c.effect) for c in links] == [(cause, effect)]
    assert 0 < links[0].confidence <= 1
    assert links[0].evidence == sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "The cache warmup did not cause the outage.",
        "The outage wasn't caused by the config push.",
        "The restart was not because of the deploy.",
        "The weather was nice.",
    ],
)
def test_negated_or_plain_statements_add_no_link(sentence: str) -> None:
    assert extract(sentence, REF).causes == []


def test_a_pronoun_cause_is_the_previous_sentence() -> None:
    links = extract("We moved billing-api to Postgres. It led to faster reports.", REF).causes
    assert [(c.cause, c.effect) for c in links] == [("We moved billing-api to Postgres", "faster reports")]


def test_events_are_statements_with_a_time_resolved_against_the_reference() -> None:
    out = extract(
        "The auth service crashed on Tuesday. Nobody noticed. Caroline went to the support group on 7 May 2023.", REF
    )
    assert [(e.description, e.occurred_at) for e in out.events] == [
        ("The auth service crashed on Tuesday.", datetime(2026, 1, 13, tzinfo=UTC)),
        ("Caroline went to the support group on 7 May 2023.", datetime(2023, 5, 7, tzinfo=UTC)),
    ]
    assert out.events[0].entities == ("auth service",)


@pytest.mark.parametrize(
    ("sentence", "fact"),
    [
        ("Alice works on the Auth Service.", ExtractedFact("Alice", "works_on", "Auth Service")),
        ("Bob reports to Carol.", ExtractedFact("Bob", "reports_to", "Carol")),
        (
            "The ledger service depends on Postgres, which we host ourselves.",
            ExtractedFact("ledger service", "depends_on", "Postgres"),
        ),
        ("Mei lives in Lisbon.", ExtractedFact("Mei", "lives_in", "Lisbon")),
    ],
)
def test_facts(sentence: str, fact: ExtractedFact) -> None:
    assert extract(sentence, REF).facts == [fact]


@pytest.mark.parametrize("sentence", ["Bob doesn't use Vim.", "It depends on the weather."])
def test_negated_or_pronoun_facts_are_not_extracted(sentence: str) -> None:
    assert extract(sentence, REF).facts == []


def test_no_longer_states_no_fact_but_the_end_of_one() -> None:
    # Issue 25: "no longer" closes the fact that held (the write closes it, adds none).
    assert extract("Alice no longer works on Payments.", REF).facts == [
        ExtractedFact("Alice", "works_on", "Payments", None, REF, ends=True)
    ]


def test_entities_known_names_code_and_proper_nouns() -> None:
    out = extract(
        "Rafael fixed render_report() in core/report.py for the pepper team.", REF, known_names=("pepper team",)
    )
    names = {e.name for e in out.entities}
    assert {"Rafael", "render_report()", "core/report.py", "pepper team"} <= names
    types = {e.name: e.type for e in out.entities}
    assert types["render_report()"] == "Code"


def test_nothing_to_extract() -> None:
    out = extract("hmm, ok", REF)
    assert (out.entities, out.events, out.facts, out.causes) == ([], [], [], [])


@pytest.mark.parametrize(
    "turn",
    [
        "Wow, that's amazing! Congrats on the new job.",
        "Thanks for sharing. Yeah, it was a lot of fun.",
        "Hey! Sure thing, I'd love to. Awesome!",
        "Oh no. Well, I guess that happens. Hmm, not sure.",
        "Really excited about it! Totally worth the wait.",
        "They're so cute. We've been there twice. Knowing I'm not alone helps.",
        "Last Fri I went hiking. Sounds great to me.",
    ],
)
def test_sentence_openers_that_are_not_names_are_no_entities(turn: str) -> None:
    assert [e.name for e in extract(turn, REF).entities] == []


@pytest.mark.parametrize(
    ("turn", "names"),
    [
        ("Alice deployed the new build.", ["Alice"]),
        ("Caroline went to the support group yesterday.", ["Caroline"]),
        ("Rafael also fixed the login page.", ["Rafael"]),
        ("Mel is painting again. Wow, Mel, that is lovely.", ["Mel"]),
        # "A and B" are two names (issue 25: only the first of "X and Y" was taken, as one name).
        ("Oliver loves the beach. Luna and Oliver chased a ball.", ["Oliver", "Luna"]),
        ("Wow Caroline, that's great! Thanks Mel.", ["Caroline", "Mel"]),
        ("Sweden was lovely.", ["Sweden"]),
        ("Oscar has a new cage. Luna and Oscar share it.", ["Oscar", "Luna"]),
        ("Anthony and I went to a charity quiz.", ["Anthony"]),
        ("Rowling is such an inspiring writer.", ["Rowling"]),
        ("Caroline is going to the parade.", ["Caroline"]),
        ("Melanie said the show went well.", ["Melanie"]),
        ("Postgres is down again.", ["Postgres"]),
        ("Kubernetes failed after the deploy.", ["Kubernetes"]),
        ("New York is lovely in May.", ["New York"]),
        ("Pottery is fun. I showed my Pottery to Mel.", ["Pottery", "Mel"]),  # capitalised mid-sentence
    ],
)
def test_names_opening_a_sentence_are_still_found(turn: str, names: list[str]) -> None:
    assert [e.name for e in extract(turn, REF).entities] == names


@pytest.mark.parametrize(
    "turn",
    [
        "Art is my passion.",
        "Running helps me.",
        "Painting helps me relax.",
        "Pottery is like therapy.",
        "Family means everything.",
        "Volunteering has changed me.",
        "Adoption is a big step.",
        "Never had a chance to go.",
    ],
)
def test_topic_nouns_opening_a_statement_are_no_entities(turn: str) -> None:
    assert [e.name for e in extract(turn, REF).entities] == []


def test_an_opener_the_graph_knows_is_a_name() -> None:
    assert [e.name for e in extract("Bailey! Come back here.", REF, known_names=("Bailey",)).entities] == ["Bailey"]


def test_people_the_graph_knows_joined_by_and_are_each_an_entity() -> None:
    found = extract("Yesterday Jon and Gina went to the dance fair.", REF, known_names=("Jon", "Gina"))
    assert [e.name for e in found.entities] == ["Jon", "Gina"]


@pytest.mark.parametrize(
    ("turn", "names"),
    [
        ("J.K. Rowling wrote Harry Potter.", ["J.K. Rowling", "Harry Potter"]),
        ("George R. R. Martin wrote it.", ["George R. R. Martin"]),
        ("I met Dr. Smith. He was late.", ["Dr. Smith"]),
        ("We flew to St. Louis on Friday.", ["St. Louis"]),
    ],
)
def test_initials_and_titles_stay_in_the_name(turn: str, names: list[str]) -> None:
    assert [e.name for e in extract(turn, REF).entities] == names


# --- issue 25: names as a person names them, validity, time of day, speakers, chains -------------


@pytest.mark.parametrize(
    ("memory", "names"),
    [
        ("Since June 2025 Alice works on the Auth Service.", ["Alice", "Auth Service"]),
        ("Dana joined the payments team on day 0.", ["Dana", "payments team"]),
        ("Priya works on the data pipeline now.", ["Priya", "data pipeline"]),
        ("The checkout service depends on Kafka and Redis.", ["checkout service", "Kafka", "Redis"]),
        ("Der Server ist gestern abgestürzt und niemand hat es bemerkt.", []),
        ("See https://status.example.org/incidents/4411 for details.", []),
        ("def retry(fn): return fn() if ok else None", []),
        ("| service | owner |\n| ledger | payments |", []),
    ],
)
def test_names_hold_no_date_article_clause_word_or_trailing_phrase(memory: str, names: list[str]) -> None:
    assert [e.name for e in extract(memory, REF).entities] == names


@pytest.mark.parametrize(
    ("memory", "fact"),
    [
        (
            "Since June 2025 Alice works on the Auth Service.",
            ExtractedFact("Alice", "works_on", "Auth Service", datetime(2025, 6, 1, tzinfo=UTC)),
        ),
        (
            "From January 2024 until May 2025 Bob worked at Initech.",
            ExtractedFact(
                "Bob", "works_at", "Initech", datetime(2024, 1, 1, tzinfo=UTC), datetime(2025, 6, 1, tzinfo=UTC)
            ),
        ),
        ("Alice is the tech lead of the Platform team.", ExtractedFact("Alice", "leads", "Platform team")),
        ("Bob joined the Search team.", ExtractedFact("Bob", "member_of", "Search team")),
        ("Bob works on the Billing team.", ExtractedFact("Bob", "member_of", "Billing team")),
        ("The pricing engine is owned by Farah.", ExtractedFact("Farah", "owns", "pricing engine")),
    ],
)
def test_facts_have_a_canonical_predicate_and_the_stated_validity(memory: str, fact: ExtractedFact) -> None:
    assert extract(memory, REF).facts == [fact]


def test_the_one_replaced_held_the_role_until_then() -> None:
    # Issue 25: "X replaced Y as Z of W" adds X's role and closes Y's.
    assert extract("Carol replaced Dave as manager of the Growth team.", REF).facts == [
        ExtractedFact("Carol", "leads", "Growth team"),
        ExtractedFact("Dave", "leads", "Growth team", None, REF, ends=True),
    ]


def test_a_place_in_a_group_is_membership_and_a_successor_closes_it() -> None:
    # "X replaced Y as Z of W" with a role that leads nothing: X's membership opens, Y's closes;
    # the same noun with no group ("the author of the report") states nothing.
    assert extract("Jonas Berg replaced Sofia Lindgren as drummer of the Paper Kites.", REF).facts == [
        ExtractedFact("Jonas Berg", "member_of", "Paper Kites"),
        ExtractedFact("Sofia Lindgren", "member_of", "Paper Kites", None, REF, ends=True),
    ]
    assert [f.predicate for f in extract("Lena Ortiz is the goalkeeper of the Harbour hockey team.", REF).facts] == [
        "member_of"
    ]
    assert extract("Mia Novak is the author of the report.", REF).facts == []


def test_a_system_migrated_runs_on_its_new_platform_and_no_longer_on_the_old() -> None:
    # "migrated from A to B": runs_on B from then, runs_on A until then; "Atlas" is the graph's
    # "Atlas cluster", the only system it shortens to. A team or a person migrating states none.
    out = extract(
        "On January 10 the payroll service was migrated from Atlas to the Boreal cluster.",
        REF,
        known_names=("Atlas cluster", "payroll service"),
    )
    on = datetime(2026, 1, 10, tzinfo=UTC)
    assert out.facts == [
        ExtractedFact("payroll service", "runs_on", "Boreal cluster", on),
        ExtractedFact("payroll service", "runs_on", "Atlas cluster", None, on, ends=True),
    ]
    assert [f.predicate for f in extract("The billing service moved to Kubernetes.", REF).facts] == ["runs_on"]
    assert extract("The mobile team migrated to Flutter last quarter.", REF).facts == []


def test_i_is_the_speaker_and_she_the_one_person_named_before() -> None:
    mine = extract("I moved to Utrecht last week.", REF, speaker="Hannah")
    assert mine.facts == [ExtractedFact("Hannah", "lives_in", "Utrecht", datetime(2026, 1, 5, tzinfo=UTC))]
    hers = extract("Fatima joined the Compliance team. She leads the audit project.", REF)
    assert [(f.subject, f.predicate, f.object) for f in hers.facts] == [
        ("Fatima", "member_of", "Compliance team"),
        ("Fatima", "leads", "audit project"),
    ]


def test_an_event_keeps_the_time_of_day_its_sentence_states() -> None:
    out = extract("Yesterday at 14:30 Sam restarted the database cluster.", REF)
    assert [(e.occurred_at, e.entities) for e in out.events] == [
        (datetime(2026, 1, 13, 14, 30, tzinfo=UTC), ("Sam", "database cluster"))
    ]


def test_a_chain_of_causes_in_one_memory_and_a_denied_one() -> None:
    out = extract(
        "The samples spoiled because the freezer warmed to 5 degrees, because the outage lasted six hours "
        "and the generator failed to start. The fire was not caused by the heater.",
        REF,
    )
    assert [(c.cause, c.effect) for c in out.causes] == [
        ("the freezer warmed to 5 degrees", "The samples spoiled"),
        ("the outage lasted six hours", "the freezer warmed to 5 degrees"),
        ("the generator failed to start", "the freezer warmed to 5 degrees"),
    ]


def test_which_caused_links_the_clause_it_hangs_on() -> None:
    out = extract("The API gateway timed out, which caused the checkout to fail.", REF)
    assert [(c.cause, c.effect) for c in out.causes] == [("The API gateway timed out", "the checkout to fail")]
