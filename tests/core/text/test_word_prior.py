"""The word prior: read while the server starts, not by the first search; how informative a word
is; whether it is an ordinary English word or a name."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyg.core.text import word_prior
from polyg.core.text.chunking import tokenizer
from polyg.embed import create_embedder
from polyg.runtime.app import Polyg
from tests.core.conftest import isolated_settings

pytestmark = pytest.mark.anyio


async def test_the_prior_is_loaded_once_start_up_completes(tmp_path: Path) -> None:
    # What an earlier test of this process read is forgotten: only the start-up may read it.
    tokenizer.cache_clear()
    word_prior.forget()
    assert not word_prior.loaded()
    core = Polyg(isolated_settings(tmp_path), embedder=create_embedder("hashing"))
    try:
        await core.ready()
        assert word_prior.loaded()
    finally:
        await core.close()


def test_informativeness_ranks_rare_words_above_common_ones() -> None:
    word_prior.load()
    assert word_prior.informativeness("the") == 0.0
    assert 0.0 < word_prior.informativeness("player") < word_prior.informativeness("saxophonist") <= 1.0


@pytest.mark.parametrize(
    "word",
    ["Art", "Family", "Running", "Painting", "Pottery", "Volunteering", "Adoption", "Great", "Mixed", "Mentors"],
)
def test_ordinary_words_are_common(word: str) -> None:
    assert word_prior.common_word(word)


@pytest.mark.parametrize("word", ["Caroline", "Melanie", "Sweden", "Postgres", "Kubernetes", "Oliver", "Williams"])
def test_names_are_not_common_words(word: str) -> None:
    assert not word_prior.common_word(word)
