"""Search quality on a small fixed corpus: the real MiniLM embedder on the embedded store.

The corpus mixes topics (musicians, cities, software, sports, food) so that every query has
plausible distractors: "davis trumpet" has the Davis Cup, "Paris" has the Eiffel Tower that
names Paris more often than Paris itself does, "saxophone player" has Miles Davis who
"played" (one typo away from "player") and a tennis player. Assertions are on ranks only,
never on scores. The tuning of `polyg.core.search.service.DEFAULT` on LoCoMo (bench/quality/locomo_eval.py)
must keep these passing.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from polyg.config import load_settings
from polyg.core.search.service import (
    DEFAULT,
    SearchConfig,
    agent_noun,
    background_weights,
    fuzzy_candidates,
    query_terms,
    stem,
    vector_ranking,
)
from polyg.core.text.word_prior import informativeness
from polyg.errors import EmptyQuery
from polyg.runtime.app import Polyg, Services
from tests.mcp_helpers import reap_embedded

PROJECT = "searchq"
OTHER_PROJECT = "searchq_other"

CORPUS: list[dict[str, Any]] = [
    # --- musicians
    {
        "name": "Miles Davis",
        "entityType": "musician",
        "observations": [
            "He played the trumpet in jazz bands from the 1940s on.",
            "Recorded Kind of Blue in 1959.",
        ],
    },
    {
        "name": "John Coltrane",
        "entityType": "musician",
        "observations": ["A tenor saxophonist and bandleader.", "Recorded A Love Supreme in 1964."],
    },
    {
        "name": "Nina Simone",
        "entityType": "musician",
        "observations": ["Singer, pianist and civil rights activist, called the High Priestess of Soul."],
    },
    {
        "name": "Johann Sebastian Bach",
        "entityType": "composer",
        "observations": ["Baroque composer of the Brandenburg Concertos and the Goldberg Variations."],
    },
    {
        "name": "Ella Fitzgerald",
        "entityType": "musician",
        "observations": ["Jazz singer famous for her scat improvisation and a three-octave range."],
    },
    # --- cities and places
    {
        "name": "Paris",
        "entityType": "city",
        "observations": ["Capital of France, on the Seine river.", "About two million people live there."],
    },
    {
        "name": "Eiffel Tower",
        "entityType": "landmark",
        "observations": [
            "Wrought-iron tower on the Champ de Mars in Paris, built for the 1889 Paris exposition.",
            "The most visited paid monument of Paris.",
        ],
    },
    {
        "name": "Tokyo",
        "entityType": "city",
        "observations": ["Capital of Japan and the most populous metropolitan area in the world."],
    },
    {
        "name": "Lisbon",
        "entityType": "city",
        "observations": ["Hilly coastal capital of Portugal, known for its yellow trams and fado music."],
    },
    {
        "name": "Nairobi",
        "entityType": "city",
        "observations": ["Capital of Kenya, with a national park where lions and giraffes roam near the city."],
    },
    # --- software
    {
        "name": "PostgreSQL",
        "entityType": "software",
        "observations": ["Open-source relational database system that speaks SQL.", "Supports JSONB columns."],
    },
    {
        "name": "Redis",
        "entityType": "software",
        "observations": ["In-memory key-value store, often used as a cache or a message broker."],
    },
    {
        "name": "Python",
        "entityType": "programming language",
        "observations": ["Created by Guido van Rossum; popular for scripting and data science."],
    },
    {
        "name": "Kubernetes",
        "entityType": "software",
        "observations": ["Container orchestration system originally designed at Google."],
    },
    {
        "name": "Git",
        "entityType": "software",
        "observations": ["Distributed version control system written by Linus Torvalds in 2005."],
    },
    # --- sports
    {
        "name": "Serena Williams",
        "entityType": "athlete",
        "observations": ["American tennis player who won 23 Grand Slam singles titles."],
    },
    {
        "name": "Usain Bolt",
        "entityType": "athlete",
        "observations": ["Jamaican sprinter who holds the 100 metres world record."],
    },
    {
        "name": "Davis Cup",
        "entityType": "tournament",
        "observations": ["International team event in men's tennis, first held in 1900.", "Named after Dwight Davis."],
    },
    {
        "name": "Tour de France",
        "entityType": "race",
        "observations": ["Multi-stage bicycle race held every July, finishing in Paris."],
    },
    # --- food and drink
    {
        "name": "Sushi",
        "entityType": "dish",
        "observations": ["Japanese dish of vinegared rice with raw fish or vegetables."],
    },
    {
        "name": "Croissant",
        "entityType": "pastry",
        "observations": ["Flaky, buttery crescent-shaped pastry eaten at breakfast."],
    },
    {
        "name": "Pad Thai",
        "entityType": "dish",
        "observations": ["Stir-fried rice noodles from Thailand with peanuts, egg and tamarind."],
    },
    {
        "name": "Guacamole",
        "entityType": "dish",
        "observations": ["Mexican avocado dip with lime, onion and cilantro."],
    },
    {
        "name": "Espresso",
        "entityType": "drink",
        "observations": ["Strong Italian coffee brewed by forcing hot water through finely ground beans."],
    },
    {
        "name": "Mount Kilimanjaro",
        "entityType": "mountain",
        "observations": ["Dormant volcano in Tanzania and the highest mountain in Africa."],
    },
]

# Seen only in OTHER_PROJECT: searches in PROJECT must never return it, and the reverse.
OTHER_CORPUS: list[dict[str, Any]] = [
    {
        "name": "Chet Baker",
        "entityType": "musician",
        "observations": ["Jazz trumpet player and singer of the West Coast cool style."],
    },
]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("search_quality")
    yield root / "data"
    reap_embedded(root / "data")  # only acts if close() did not stop the database


@pytest.fixture(scope="module")
async def services(data_dir: Path) -> AsyncIterator[Services]:
    """One embedded store with the real MiniLM embedder, loaded once for the module."""
    with pytest.MonkeyPatch.context() as mp:
        # No user configuration may leak in (another embedder, a server URL).
        for name in list(os.environ):
            if name.startswith(("POLYG_", "FALKORDB_")) or name == "EMBEDDING_MODEL":
                mp.delenv(name)
        mp.setenv("XDG_CONFIG_HOME", str(data_dir.parent / "config"))
        settings = load_settings(None, data_dir=data_dir, log_dir=data_dir.parent / "logs", embedding_provider="minilm")
    core = Polyg(settings)
    try:
        services = await core.ready()
        assert len(await services.named.create_entities(PROJECT, CORPUS)) == len(CORPUS)
        assert len(await services.named.create_entities(OTHER_PROJECT, OTHER_CORPUS)) == len(OTHER_CORPUS)
        yield services
    finally:
        await core.close()


async def names(services: Services, query: str, limit: int = 5, project: str = PROJECT) -> list[str]:
    hits = await services.search.entities(project, query, limit)
    assert len(hits) <= limit
    found = await services.named.entities(project, [entity_id for entity_id, _ in hits])
    return [e.name for e in found]


@pytest.mark.anyio
async def test_multi_word_query_combines_name_and_observation(services: Services) -> None:
    # "davis" is in two names (Miles Davis, Davis Cup); only Miles Davis also played the trumpet.
    assert (await names(services, "davis trumpet"))[0] == "Miles Davis"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # "saxophone" never occurs (the text says "saxophonist"), "player" occurs for a tennis
        # player, and "player" is one edit away from "played" in Miles Davis's observation.
        ("saxophone player", "John Coltrane"),
        ("trumpet player", "Miles Davis"),
        ("database for relational data", "PostgreSQL"),
        ("fastest runner", "Usain Bolt"),
        ("Japanese food with raw fish", "Sushi"),
        ("tallest peak in Africa", "Mount Kilimanjaro"),
        ("version control", "Git"),
    ],
)
async def test_paraphrase_ranks_the_meaning_first(services: Services, query: str, expected: str) -> None:
    assert (await names(services, query))[0] == expected


@pytest.mark.anyio
@pytest.mark.parametrize(("query", "crowd"), [("Paris", "Eiffel Tower"), ("Davis Cup", "Miles Davis")])
async def test_exact_name_comes_first(services: Services, query: str, crowd: str) -> None:
    # The Eiffel Tower's observations say "Paris" three times; Paris's own never do.
    found = await names(services, query)
    assert found[0] == query
    assert crowd in found


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("trumpit", "Miles Davis"),
        ("Coltrain", "John Coltrane"),
        ("Kubernetis", "Kubernetes"),
        ("guacamol", "Guacamole"),
    ],
)
async def test_typo_still_finds_the_entity(services: Services, query: str, expected: str) -> None:
    assert expected in (await names(services, query))[:2]


@pytest.mark.anyio
async def test_query_without_good_answer_respects_limit(services: Services) -> None:
    for limit in (1, 3):
        found = await names(services, "quantum chromodynamics on a lattice", limit=limit)
        assert len(found) <= limit


@pytest.mark.anyio
@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
async def test_empty_query_is_refused(services: Services, query: str) -> None:
    with pytest.raises(EmptyQuery) as info:
        await services.search.entities(PROJECT, query, 5)
    assert info.value.code == 5001


@pytest.mark.anyio
@pytest.mark.parametrize(
    "query",
    [
        '"@foo|bar*" -(x)',
        "%%trumpet%% | @name:{x} ~y",
        "*",
        "-",
        "'; MATCH (n) DETACH DELETE n //",
        "$q {a: 1}",
        "trumpet\\",
        "🎺 trumpet",
        "C++ & C#",
        "_ __init__ a_b",
        "1959",
        "%",
        "trumpet " * 2000,
    ],
)
async def test_special_characters_do_not_break_search(services: Services, query: str) -> None:
    found = await names(services, query)
    assert len(found) <= 5
    # The graph is intact (the query text never reached Cypher or the full-text syntax raw).
    assert "Miles Davis" in await names(services, "Miles Davis")


@pytest.mark.anyio
async def test_many_words_are_capped(services: Services) -> None:
    # A pasted page: thousands of distinct words, each of which would cost an index lookup.
    query = " ".join(f"w{i}" for i in range(1500)) + " trumpet"
    assert len(query_terms(query)) == DEFAULT.max_terms
    assert len(await names(services, query)) <= 5


def test_query_words_reach_the_index_as_plain_words() -> None:
    assert query_terms('"@foo|bar*" -(x) %%baz%%') == ["foo", "bar", "x", "baz"]
    # Function words are left out, unless nothing else is left.
    assert query_terms("When did she play the trumpet?") == ["play", "trumpet"]
    assert query_terms("The Who") == ["the", "who"]
    assert query_terms("The Who", SearchConfig(drop_stopwords=False)) == ["the", "who"]
    # Typo variants only for words long enough to have few neighbours, never for numbers.
    assert fuzzy_candidates(["trumpit", "jazz", "19599"]) == ["trumpit"]
    # A stem for the relatives of a word; none too short to be specific, none for numbers.
    assert [stem(w) for w in ("saxophone", "drums", "players", "trumpet", "sax", "1959", "a_b")] == [
        "saxophon",
        "drum",
        "play",
        "trumpet",
        None,
        None,
        None,
    ]
    # An "-o" word's "-ist" noun, which its stem ("piano*") does not reach.
    assert [agent_noun(w) for w in ("piano", "cello", "solo", "trumpet", "pianist")] == [
        "pianist",
        "cellist",
        None,
        None,
        None,
    ]


def test_near_misses_of_the_vector_list_are_listed_without_a_vote() -> None:
    similarity = {"sax": 0.91, "tenor": 0.75, "trumpet": 0.67, "noise": 0.25}
    # "trumpet" is more than the margin below the best: no second vote for what the text finds.
    assert vector_ranking(similarity) == [("sax", 1.0), ("tenor", 1.0), ("trumpet", 0.0)]
    # Alone, the vector list is the ranking: every hit above the noise floor votes.
    assert vector_ranking(similarity, fused=False) == [("sax", 1.0), ("tenor", 1.0), ("trumpet", 1.0)]


def test_background_prior_weighs_common_words_less_in_small_projects() -> None:
    # The commonest word is worth nothing, a word the vocabulary splits (rare, a name, a typo)
    # the most; in between, by frequency rank.
    assert informativeness("the") == 0.0
    assert informativeness("player") < informativeness("saxophone") < informativeness("bebop") == 1.0
    assert informativeness("played") < informativeness("drummer")
    small = background_weights(["player", "saxophone"], texts=14)
    assert small["player"] < small["saxophone"] <= 1.0
    # A large project's own counts decide: the prior fades.
    large = background_weights(["player", "saxophone"], texts=100_000)
    assert all(0.99 < weight <= 1.0 for weight in large.values())
    assert background_weights(["player"], texts=14, config=SearchConfig(background_texts=0)) == {}


@pytest.mark.anyio
async def test_projects_are_isolated(services: Services) -> None:
    mine = await names(services, "jazz trumpet player", limit=10)
    assert "Chet Baker" not in mine
    assert "Miles Davis" in mine
    theirs = await names(services, "jazz trumpet player", limit=10, project=OTHER_PROJECT)
    assert theirs == ["Chet Baker"]
    assert await services.search.entities("searchq_never_written", "trumpet", 5) == []


# --- A corpus the ranking was not tuned on -------------------------------------------------
# Issue 9 found the misses below on these musicians. The queries of
# `test_untuned_corpus_held_out` were written down before the ranking was changed for the
# issue's cases and were not used to choose it.

MUSICIANS_PROJECT = "searchq_musicians"

MUSICIANS: list[dict[str, Any]] = [
    {"name": "Charlie Parker", "entityType": "musician", "observations": ["Alto saxophonist nicknamed Bird"]},
    {"name": "John Coltrane", "entityType": "musician", "observations": ["Played tenor and soprano sax"]},
    {"name": "Sonny Rollins", "entityType": "musician", "observations": ["Tenor saxophonist"]},
    {"name": "Ornette Coleman", "entityType": "musician", "observations": ["Alto saxophone player"]},
    {"name": "Louis Armstrong", "entityType": "musician", "observations": ["New Orleans trumpet player and singer"]},
    {"name": "Miles Davis", "entityType": "musician", "observations": ["Trumpeter and bandleader"]},
    {"name": "Art Blakey", "entityType": "musician", "observations": ["Drummer who led the Jazz Messengers"]},
    {"name": "Thelonious Monk", "entityType": "musician", "observations": ["Jazz pianist and composer"]},
    {"name": "Ella Fitzgerald", "entityType": "musician", "observations": ["Jazz singer known for scat"]},
    {"name": "Charles Mingus", "entityType": "musician", "observations": ["Double bassist and composer"]},
    {"name": "Bill Evans", "entityType": "musician", "observations": ["Pianist of the trio with Scott LaFaro"]},
    {"name": "Angela Davis", "entityType": "person", "observations": ["Political activist and author"]},
    {"name": "Davis Cup", "entityType": "event", "observations": ["International team event in men's tennis"]},
    {"name": "Usain Bolt", "entityType": "athlete", "observations": ["Jamaican sprinter"]},
]
SAXOPHONISTS = {"Charlie Parker", "John Coltrane", "Sonny Rollins", "Ornette Coleman"}
TRUMPETERS = {"Louis Armstrong", "Miles Davis"}


@pytest.fixture(scope="module")
async def musicians(services: Services) -> Services:
    assert len(await services.named.create_entities(MUSICIANS_PROJECT, MUSICIANS)) == len(MUSICIANS)
    return services


async def musician_names(services: Services, query: str, limit: int = 8) -> list[str]:
    return await names(services, query, limit=limit, project=MUSICIANS_PROJECT)


@pytest.mark.anyio
async def test_accidental_shared_word_does_not_outweigh_the_meaning(musicians: Services) -> None:
    # "player" is in a trumpeter's text, "played" in a saxophonist's; before: Armstrong 2nd,
    # Miles Davis 5th, Parker 8th. "saxophone" now also finds "saxophonist" (by its stem).
    # Parker, whom the vector ranks 9th, is found by "saxophonist" alone
    # (`test_the_four_saxophonists_come_first`).
    found = await musician_names(musicians, "saxophone player")
    assert found[0] == "Ornette Coleman"
    assert SAXOPHONISTS <= set(found[:6])
    assert "Miles Davis" not in found[:6]
    # "played" is in Coltrane's text; the drummer is the meaning ("drums" finds "drummer").
    assert (await musician_names(musicians, "who played the drums"))[0] == "Art Blakey"


@pytest.mark.anyio
async def test_piano_reaches_the_pianists(musicians: Services) -> None:
    # "piano" reaches "pianist" (its "-ist" noun): both pianists were 4th and 6th before, behind
    # the three texts holding "player"/"played". A miss left: they are the first two only in
    # some stores. "player" (Armstrong, Coleman) and "pianist" (Monk, Evans) give four equal
    # text sums, ordered by random entity ids, and the vector ranks Coleman's "Alto saxophone
    # player" 2nd, Evans 4th.
    assert {"Thelonious Monk", "Bill Evans"} <= set((await musician_names(musicians, "piano player"))[:4])


@pytest.mark.anyio
async def test_the_four_saxophonists_come_first(musicians: Services) -> None:
    assert set((await musician_names(musicians, "saxophone player"))[:4]) == SAXOPHONISTS


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "expected"),
    [("trumpter", TRUMPETERS), ("Colrtane", {"John Coltrane"})],
)
async def test_typo_beats_noise_level_vector_hits(musicians: Services, query: str, expected: set[str]) -> None:
    found = await musician_names(musicians, query)
    assert set(found[: len(expected)]) == expected
    assert not {"Angela Davis", "Usain Bolt"} & set(found[: len(expected)])


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param(
            "bebop alto sax",
            {"Charlie Parker", "Ornette Coleman"},
            marks=pytest.mark.xfail(
                strict=True,
                reason="both lists rank Coltrane above Parker: his 'sax' as written is the text list's first "
                "(idf 2.22 against 'alto' 1.63) and his cosine the vector's second (0.58 against 0.53): a miss left",
            ),
        ),
        ("jazz drummer", {"Art Blakey"}),
        ("trumpet", TRUMPETERS),
        ("bass player", {"Charles Mingus"}),
        ("Rolins", {"Sonny Rollins"}),
        ("Angla Davis", {"Angela Davis"}),
        ("Thelonius", {"Thelonious Monk"}),
        ("tennis competition", {"Davis Cup"}),
        ("who played tennis", {"Davis Cup"}),
        ("fast runner", {"Usain Bolt"}),
    ],
)
async def test_untuned_corpus_held_out(musicians: Services, query: str, expected: set[str]) -> None:
    assert set((await musician_names(musicians, query))[: len(expected)]) == expected


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("piano player", "Nina Simone"),
        ("who played tennis", "Serena Williams"),
        ("cache server", "Redis"),
        ("Kilimanjro", "Mount Kilimanjaro"),
        ("Lisbom", "Lisbon"),
        ("bicycle race", "Tour de France"),
        ("coffee drink", "Espresso"),
        ("Gudio van Rosum", "Python"),
    ],
)
async def test_first_corpus_held_out(services: Services, query: str, expected: str) -> None:
    assert (await names(services, query))[0] == expected


# --- A third corpus, written down before the fix for the cases above and not tuned on -------
# People described by a specific word and a generic one ("player", "who studied"), with
# distractors that share only the generic word, and words that reach each other only through
# their forms ("cello" / "cellist", "guitar" / "guitarist"). Before the "-ist" nouns, "piano
# player" failed too. "soccer player" was written down as well and left out: "soccer" matches
# nothing, so the text list is five texts holding "player" at equal sums, in the order of
# their random ids, and Messi (the vector's clear first) ranks 1st to 3rd by store.

PEOPLE_PROJECT = "searchq_people"

PEOPLE: list[dict[str, Any]] = [
    {"name": "Yo-Yo Ma", "entityType": "person", "observations": ["Cellist born in Paris to Chinese parents"]},
    {"name": "Jacqueline du Pre", "entityType": "person", "observations": ["English cellist known for Elgar"]},
    {"name": "Jimi Hendrix", "entityType": "person", "observations": ["Guitarist and singer of the Experience"]},
    {"name": "Andres Segovia", "entityType": "person", "observations": ["Classical guitar player from Spain"]},
    {"name": "Itzhak Perlman", "entityType": "person", "observations": ["Violinist and teacher"]},
    {"name": "Earl Scruggs", "entityType": "person", "observations": ["Banjo player of bluegrass"]},
    {"name": "Glenn Gould", "entityType": "person", "observations": ["Canadian pianist known for Bach recordings"]},
    {"name": "Ringo Starr", "entityType": "person", "observations": ["Drummer of the Beatles"]},
    {"name": "Lionel Messi", "entityType": "person", "observations": ["Argentine football player"]},
    {"name": "Magnus Carlsen", "entityType": "person", "observations": ["Norwegian chess player and world champion"]},
    {"name": "Serena Williams", "entityType": "person", "observations": ["Tennis player with 23 Grand Slam titles"]},
    {
        "name": "Marie Curie",
        "entityType": "person",
        "observations": ["Physicist and chemist who studied radioactivity"],
    },
    {"name": "Jane Goodall", "entityType": "person", "observations": ["Primatologist who studied chimpanzees"]},
    {"name": "Gordon Ramsay", "entityType": "person", "observations": ["Chef and restaurant owner"]},
    {"name": "Record Player", "entityType": "device", "observations": ["Turntable that plays vinyl"]},
]


# The saxophone case turned round: the vector ranks a guitarist and a violinist first (cosine
# 0.63, 0.61) and the cellists 9th and lower (0.34, 0.23, no vote), the text list ranks the
# cellists first (through "cellist"). A vector list's first vote is worth a text list's first,
# so the guitarist ties the first cellist even without his "player" and no fusion of the two
# ranks puts both cellists first; it takes a vector that knows "cellist" is a cello player.
CELLO_MISS = "the vector ranks a guitar player first and the cellists, found by text only, 9th and lower: a miss left"


@pytest.fixture(scope="module")
async def people(services: Services) -> Services:
    assert len(await services.named.create_entities(PEOPLE_PROJECT, PEOPLE)) == len(PEOPLE)
    return services


@pytest.mark.anyio
async def test_people_piano_player(people: Services) -> None:
    # Glenn Gould ("pianist") is first unless the random ids put the record player's name
    # ("player", an equal text sum) before him and the guitarist first among the five other
    # texts holding "player": then the guitarist (the vector's first) is, by a hair.
    found = await names(people, "piano player", limit=8, project=PEOPLE_PROJECT)
    assert "Glenn Gould" in found[:2]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param(
            "cello player", {"Yo-Yo Ma", "Jacqueline du Pre"}, marks=pytest.mark.xfail(strict=True, reason=CELLO_MISS)
        ),
        ("guitar player", {"Jimi Hendrix", "Andres Segovia"}),
        ("violin player", {"Itzhak Perlman"}),
        ("banjo", {"Earl Scruggs"}),
        pytest.param(
            "who played the cello",
            {"Yo-Yo Ma", "Jacqueline du Pre"},
            marks=pytest.mark.xfail(strict=True, reason=CELLO_MISS),
        ),
        ("chess champion", {"Magnus Carlsen"}),
        ("cook", {"Gordon Ramsay"}),
        ("ape researcher", {"Jane Goodall"}),
        ("who studied chemistry", {"Marie Curie"}),
        ("violnist", {"Itzhak Perlman"}),
        ("guitarrist", {"Jimi Hendrix"}),
        ("drum player", {"Ringo Starr"}),
    ],
)
async def test_people_held_out(people: Services, query: str, expected: set[str]) -> None:
    found = await names(people, query, limit=8, project=PEOPLE_PROJECT)
    assert set(found[: len(expected)]) == expected


# --- A fourth corpus, written down before the background word prior and not tuned on -------
# Athletes, programmers and writers, each described by one specific word ("hockey", "kernel",
# "quarterback") and often a generic one ("player", "who wrote", "with ... titles") that the
# distractors share.

ROLES_PROJECT = "searchq_roles"

ROLES: list[dict[str, Any]] = [
    {"name": "Grace Hopper", "entityType": "person", "observations": ["Compiler pioneer and navy officer"]},
    {
        "name": "Linus Torvalds",
        "entityType": "person",
        "observations": ["Finnish programmer who wrote the Linux kernel"],
    },
    {
        "name": "Margaret Hamilton",
        "entityType": "person",
        "observations": ["Engineer who led the Apollo flight software"],
    },
    {"name": "Ada Lovelace", "entityType": "person", "observations": ["Mathematician who wrote the first program"]},
    {"name": "Ken Thompson", "entityType": "person", "observations": ["Co-designer of Unix at Bell Labs"]},
    {"name": "Tim Berners-Lee", "entityType": "person", "observations": ["Inventor of the World Wide Web"]},
    {"name": "Stephen King", "entityType": "person", "observations": ["Novelist who wrote horror books"]},
    {"name": "Wayne Gretzky", "entityType": "person", "observations": ["Canadian hockey player"]},
    {"name": "Michael Jordan", "entityType": "person", "observations": ["Basketball player with six championships"]},
    {"name": "Tom Brady", "entityType": "person", "observations": ["Quarterback who won seven Super Bowls"]},
    {"name": "Tiger Woods", "entityType": "person", "observations": ["Golfer with fifteen major titles"]},
    {"name": "Michael Phelps", "entityType": "person", "observations": ["Swimmer with 23 Olympic gold medals"]},
    {"name": "Garry Kasparov", "entityType": "person", "observations": ["Chess grandmaster and former world champion"]},
    {"name": "Roger Federer", "entityType": "person", "observations": ["Swiss tennis player"]},
    {"name": "Pele", "entityType": "person", "observations": ["Brazilian footballer who won three World Cups"]},
    {"name": "Team Roster", "entityType": "software", "observations": ["Mobile app where coaches list each player"]},
]


@pytest.fixture(scope="module")
async def roles(services: Services) -> Services:
    assert len(await services.named.create_entities(ROLES_PROJECT, ROLES)) == len(ROLES)
    return services


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("hockey player", {"Wayne Gretzky"}),
        ("golf player", {"Tiger Woods"}),
        ("football player", {"Pele"}),
        ("chess player", {"Garry Kasparov"}),
        ("tennis player", {"Roger Federer"}),
        ("basketball star", {"Michael Jordan"}),
        ("swimming champion", {"Michael Phelps"}),
        ("quarterback", {"Tom Brady"}),
        ("who wrote the kernel", {"Linus Torvalds"}),
        ("horror writer", {"Stephen King"}),
        ("unix programmer", {"Ken Thompson"}),
        ("web inventor", {"Tim Berners-Lee"}),
        ("compiler", {"Grace Hopper"}),
        ("Kasparof", {"Garry Kasparov"}),
        ("golf champion", {"Tiger Woods"}),
        pytest.param(
            "football champion",
            {"Pele"},
            marks=pytest.mark.xfail(
                strict=True,
                reason="both lists rank Garry Kasparov ('world champion') first: text 'champion' 1.89 against "
                "'football*' 1.65, cosine 0.48 against Pele's 0.40 (3rd, after a quarterback): a miss left",
            ),
        ),
        ("hockey star", {"Wayne Gretzky"}),
        ("linux developer", {"Linus Torvalds"}),
        ("app for coaches", {"Team Roster"}),
        ("who wrote novels", {"Stephen King"}),
    ],
)
async def test_roles_held_out(roles: Services, query: str, expected: set[str]) -> None:
    found = await names(roles, query, limit=8, project=ROLES_PROJECT)
    assert set(found[: len(expected)]) == expected


# --- A fifth corpus, written down before the ranking change of issue 9's item 16 and not tuned on
# People known for a craft or a feat, each told by one specific word ("sculptor", "aviator")
# and often a generic one ("designer", "painter", "who made", "television") that a distractor
# shares; a typo of a name or a trade must still find its entity.

CRAFTS_PROJECT = "searchq_crafts"

CRAFTS: list[dict[str, Any]] = [
    {"name": "Ansel Adams", "entityType": "person", "observations": ["Photographer of Yosemite landscapes"]},
    {"name": "Frida Kahlo", "entityType": "person", "observations": ["Mexican painter of self-portraits"]},
    {"name": "Auguste Rodin", "entityType": "person", "observations": ["French sculptor who made The Thinker"]},
    {"name": "Frank Lloyd Wright", "entityType": "person", "observations": ["Architect who designed Fallingwater"]},
    {"name": "Coco Chanel", "entityType": "person", "observations": ["Fashion designer who founded a Paris house"]},
    {
        "name": "Julia Child",
        "entityType": "person",
        "observations": ["Cook who brought French cuisine to American television"],
    },
    {"name": "Neil Armstrong", "entityType": "person", "observations": ["Astronaut who first walked on the Moon"]},
    {"name": "Amelia Earhart", "entityType": "person", "observations": ["Aviator who flew solo across the Atlantic"]},
    {"name": "Jacques Cousteau", "entityType": "person", "observations": ["Ocean explorer and filmmaker"]},
    {"name": "Charles Darwin", "entityType": "person", "observations": ["Naturalist who wrote about evolution"]},
    {"name": "Harry Houdini", "entityType": "person", "observations": ["Escape artist and magician"]},
    {"name": "Bob Ross", "entityType": "person", "observations": ["Television painter of happy little trees"]},
    {"name": "Steinway", "entityType": "company", "observations": ["Company that builds pianos in New York"]},
    {"name": "Blue Whale", "entityType": "animal", "observations": ["The largest animal that ever lived"]},
    {"name": "Model T", "entityType": "car", "observations": ["Ford car made on an assembly line"]},
]


@pytest.fixture(scope="module")
async def crafts(services: Services) -> Services:
    assert len(await services.named.create_entities(CRAFTS_PROJECT, CRAFTS)) == len(CRAFTS)
    return services


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("landscape photographer", {"Ansel Adams"}),
        ("portrait painter", {"Frida Kahlo"}),
        ("statue maker", {"Auguste Rodin"}),
        pytest.param(
            "building designer",
            {"Frank Lloyd Wright"},
            marks=pytest.mark.xfail(
                strict=True,
                reason="'building' is in no text, 'design*' finds Wright's 'designed' and Chanel's 'designer' "
                "alike, and the vector ranks the fashion designer first (0.56 against 0.46): a miss left",
            ),
        ),
        ("clothing designer", {"Coco Chanel"}),
        ("French cooking", {"Julia Child"}),
        ("television cook", {"Julia Child"}),
        ("moon astronaut", {"Neil Armstrong"}),
        ("who walked on the moon", {"Neil Armstrong"}),
        ("pilot who flew the ocean", {"Amelia Earhart"}),
        ("underwater explorer", {"Jacques Cousteau"}),
        ("evolution scientist", {"Charles Darwin"}),
        ("magician", {"Harry Houdini"}),
        ("tree painter", {"Bob Ross"}),
        ("piano maker", {"Steinway"}),
        ("biggest animal", {"Blue Whale"}),
        ("car factory", {"Model T"}),
        ("Houdni", {"Harry Houdini"}),
        ("Earheart", {"Amelia Earhart"}),
        ("sculpter", {"Auguste Rodin"}),
        ("photografer", {"Ansel Adams"}),
        ("painter", {"Frida Kahlo", "Bob Ross"}),
    ],
)
async def test_crafts_held_out(crafts: Services, query: str, expected: set[str]) -> None:
    found = await names(crafts, query, limit=8, project=CRAFTS_PROJECT)
    assert set(found[: len(expected)]) == expected


# --- A sixth corpus, written down with its queries before it was first searched, not tuned on
# Tradespeople told by one specific word and a generic one ("driver", "doctor", "works") that a
# distractor shares. Before and after the near-miss rule the same six pass ("horse doctor" by
# 0.001 of fused score before: the horse trainer's cosine, 0.23 below the vet's, was a second
# vote). Written down and left out, missed before and after: "wood worker" -> Omar Haddad (the
# vector ranks the timber truck driver first, 0.56 against 0.52, and "worker" reaches the
# nurse's "works") and "lorry driver" -> Ivy Moss (the vector ranks the taxi driver first, 0.53
# against 0.51; three texts hold "driver" at equal sums, so the store's random ids decide).

TRADES_PROJECT = "searchq_trades"

TRADES: list[dict[str, Any]] = [
    {"name": "Lena Park", "entityType": "person", "observations": ["Veterinarian who treats horses"]},
    {"name": "Tom Reyes", "entityType": "person", "observations": ["Horse trainer at the racetrack"]},
    {"name": "Ana Silva", "entityType": "person", "observations": ["Dentist with a practice downtown"]},
    {"name": "Ben Okoro", "entityType": "person", "observations": ["Plumber who fixes leaking pipes"]},
    {"name": "Mia Chen", "entityType": "person", "observations": ["Electrician and part-time drummer"]},
    {"name": "Sam Patel", "entityType": "person", "observations": ["Baker who makes sourdough bread"]},
    {"name": "Zoe Laurent", "entityType": "person", "observations": ["Pastry chef at a hotel"]},
    {"name": "Leo Grant", "entityType": "person", "observations": ["Taxi driver in the city"]},
    {"name": "Ivy Moss", "entityType": "person", "observations": ["Truck driver who hauls timber"]},
    {"name": "Kai Novak", "entityType": "person", "observations": ["Pilot for a cargo airline"]},
    {"name": "Nora Hale", "entityType": "person", "observations": ["Nurse who works night shifts"]},
    {"name": "Omar Haddad", "entityType": "person", "observations": ["Carpenter who builds cabinets"]},
    {
        "name": "City Hospital",
        "entityType": "place",
        "observations": ["Hospital where nurses and doctors work night shifts"],
    },
    {"name": "Ride Share", "entityType": "app", "observations": ["App that connects each driver with riders"]},
]


@pytest.fixture(scope="module")
async def trades(services: Services) -> Services:
    assert len(await services.named.create_entities(TRADES_PROJECT, TRADES)) == len(TRADES)
    return services


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("animal doctor", "Lena Park"),
        ("horse doctor", "Lena Park"),
        ("bread maker", "Sam Patel"),
        ("pipe repair", "Ben Okoro"),
        ("night nurse", "Nora Hale"),
        ("airplane pilot", "Kai Novak"),
    ],
)
async def test_trades_held_out(trades: Services, query: str, expected: str) -> None:
    assert (await names(trades, query, limit=8, project=TRADES_PROJECT))[0] == expected
