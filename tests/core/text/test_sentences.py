"""Sentence ends (polyg.core.text.sentences): abbreviations and initials do not end a sentence unless a
word that opens one follows; real ends still do."""

from __future__ import annotations

import pytest

from polyg.core.text.sentences import split


@pytest.mark.parametrize(
    "text",
    [
        "J.K. Rowling wrote Harry Potter.",  # initials
        "George R. R. Martin wrote it.",  # spaced initials
        "I met Dr. Smith at the clinic.",  # titles
        "Mr. Jones and Mrs. Jones came.",
        "We flew to St. Louis for the game.",
        "Bring something, e.g. this book.",  # lowercase abbreviations, lowercase continuation
        "Our U.S. office opened.",
        "We left at 9 a.m. and came back at 5 p.m. on Friday.",
        "We shipped v1.2 and the build took 3.5 hours.",  # decimals, versions
        "It runs on Node.js and costs approx. 20 dollars.",
    ],
)
def test_abbreviations_do_not_end_a_sentence(text: str) -> None:
    assert split(text) == [text]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I met Dr. Smith. He was late.", ["I met Dr. Smith.", "He was late."]),
        ("J.K. Rowling wrote it. Then she rested.", ["J.K. Rowling wrote it.", "Then she rested."]),
        # An abbreviation ends the sentence when a word that opens one follows.
        ("I moved to the U.S. It was hard at first.", ["I moved to the U.S.", "It was hard at first."]),
        ("We met at 9 a.m. The talk was long.", ["We met at 9 a.m.", "The talk was long."]),
        ("Wow! Really? Yes.", ["Wow!", "Really?", "Yes."]),
        ("It was 2019. 2020 was harder.", ["It was 2019.", "2020 was harder."]),
        ('She said no. "Fine," I said.', ["She said no.", '"Fine," I said.']),
        ("first line\nsecond line", ["first line", "second line"]),
    ],
)
def test_real_sentence_ends(text: str, expected: list[str]) -> None:
    assert split(text) == expected


def test_a_lowercase_word_continues_unless_any_start() -> None:
    assert split("uses redis. depends on postgres") == ["uses redis. depends on postgres"]
    assert split("uses redis. depends on postgres", any_start=True) == ["uses redis.", "depends on postgres"]
    # An abbreviation's full stop is not an end even in terse notes.
    assert split("calls Dr. Smith daily", any_start=True) == ["calls Dr. Smith daily"]
