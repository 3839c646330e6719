"""A speaker's first person in the third person (recall's answers): the verb that agrees with "I"
takes the third person by the parse; past tenses, modals and plural subjects stay as said. Whether
a sentence reads alone (an answer need not say who said it)."""

from __future__ import annotations

import pytest

from polyg.core.recall.third_person import in_third_person, reads_alone


@pytest.mark.parametrize(
    ("said", "read"),
    [
        ("I run the clinic.", "Mira runs the clinic."),
        ("I am the head of cardiology.", "Mira is the head of cardiology."),
        ("I have two cats.", "Mira has two cats."),
        ("I was a nurse in Lyon.", "Mira was a nurse in Lyon."),
        ("I moved here in 2020.", "Mira moved here in 2020."),
        ("I can speak four languages.", "Mira can speak four languages."),
        ("I run the clinic and teach at the school.", "Mira runs the clinic and teaches at the school."),
        ("I study law and I carry boxes.", "Mira studies law and Mira carries boxes."),
        ("I usually go to the gym.", "Mira usually goes to the gym."),
        ("I don't like coffee.", "Mira doesn't like coffee."),
        ("I'm tired and I've got a cold.", "Mira is tired and Mira has got a cold."),
        ("I'll call and I'd seen it.", "Mira will call and Mira had seen it."),
        ("I have been running the clinic since 2020.", "Mira has been running the clinic since 2020."),
        ("My sister and I run a bakery.", "Mira's sister and Mira run a bakery."),
        ("She gave me a book.", "She gave Mira a book."),
        ("The shop closed early.", "The shop closed early."),
    ],
)
def test_first_person_reads_in_the_third_person(said: str, read: str) -> None:
    assert in_third_person(said, "Mira") == read


@pytest.mark.parametrize(
    ("said", "alone"),
    [
        ("Marco teaches physics at the Danube Technical College.", True),
        ("The search service runs on the Cedar cluster.", True),  # the parse reads "service" as a compound
        ("Since February 2025 Miso takes methimazole twice a day.", True),
        ("There is a leak in the kitchen.", True),
        ("Our flour came from Millbrook Farms until April 2026.", False),
        ("Since May 2026 we buy flour from Hollow Oak Mill.", False),
        ("Yeah, a buddy of mine adopted last year.", False),
        ("Wow Mel, that painting is amazing!", False),
        ("Zoe has swimming lessons every Tuesday.", True),  # a time, not a name said to
        ("Did you see the game?", False),
        ("She moved to Vienna.", False),
        ("Yeah, it was amazing!", False),
        ("Went to the gym yesterday.", False),
        ("", False),
    ],
)
def test_a_sentence_reads_alone_when_its_subject_is_named_and_no_word_is_the_speakers(said: str, alone: bool) -> None:
    assert reads_alone(said) is alone
