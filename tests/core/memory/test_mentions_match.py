"""`polyg.core.memory.temporal.mentions`: a name occurs in a text as a whole word or phrase, in any
case, exactly where the word-boundary pattern it replaced finds it."""

from __future__ import annotations

import random
import re

import pytest

from polyg.core.memory.temporal import mentions


def by_pattern(text: str, name: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name.lower())}(?!\w)", text.lower()) is not None


@pytest.mark.parametrize(
    ("text", "name", "expected"),
    [
        ("Alice deployed auth-3 today", "auth-3", True),
        ("Alice deployed auth-31 today", "auth-3", False),
        ("the AUTH service", "auth", True),
        ("reauth failed", "auth", False),
        ("auth_token leaked", "auth", False),
        ("Dana: hi", "dana", True),
        ("see C++ docs", "c++", True),
        ("café opened", "caf", False),
        ("x", "", False),
        ("", "", True),
        ("auth auth-3", "auth-3", True),
        ("auth-3x then auth-3.", "auth-3", True),
    ],
)
def test_whole_words_in_any_case(text: str, name: str, expected: bool) -> None:
    assert mentions(text, name) is expected
    assert by_pattern(text, name) is expected


def test_agrees_with_the_word_boundary_pattern_on_random_texts() -> None:
    # Letters whose lower case changes length or class, combining marks, other scripts' digits.
    alphabet = [*"ab _-.İıßé1²٣ ", "ǅ", "\u0301", "K", "Σ"]
    rng = random.Random(13)
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 10)))
        name = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 4)))
        assert mentions(text, name) == by_pattern(text, name), (text, name)
