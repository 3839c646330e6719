"""The one rule by which a name means one of the graph's names (remember's extraction on write,
recall's mentions on read): the same words, a system without its head noun, the only known
person of a first name; never a guess between two names a first name may be short for."""

from __future__ import annotations

import pytest

from polyg.core.memory.aliases import KnownNames

KNOWN = KnownNames.of(["Lena Fischer", "Auth Service", "Atlas cluster", "Berlin Marathon", "Sam Ortiz", "Sam Lee"])


@pytest.mark.parametrize(
    ("name", "kind", "meant"),
    [
        ("auth service", None, "Auth Service"),
        ("auth-service", "Service", "Auth Service"),
        ("Atlas", None, "Atlas cluster"),
        ("Atlas", "Person", "Atlas"),  # a person is no system
        ("Lena", None, "Lena Fischer"),
        ("Lena", "Place", "Lena Fischer"),  # the tagger's type of an unfamiliar first name
        ("Lena", "Team", "Lena"),
        ("lena", None, "lena"),  # a first name is capitalised
        ("Sam", None, "Sam"),  # two people of that first name
        ("Berlin", None, "Berlin"),  # no person
        ("Marco", None, "Marco"),
    ],
)
def test_a_name_means_the_known_name_the_rule_gives(name: str, kind: str | None, meant: str) -> None:
    assert KNOWN.meant(name, kind) == meant


def test_a_first_name_is_not_guessed_between_a_person_and_a_name_ending_in_a_head_noun() -> None:
    # "Lena Park" may be a person or a park: "Lena" is short for neither.
    assert KnownNames.of(["Lena Fischer", "Lena Park"]).meant("Lena") == "Lena"
    assert KnownNames.of(["Lena Park"]).meant("Lena") == "Lena"


def test_the_speaker_and_an_empty_graph_mean_themselves() -> None:
    assert KnownNames.of(["Lena Fischer"]).meant("Lena", speaker="Lena") == "Lena"
    assert KnownNames.of([]).meant("Lena") == "Lena"
