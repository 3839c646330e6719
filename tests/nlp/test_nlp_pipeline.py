"""The English pipeline behind remember's extraction: its pinned model is verified before use,
long texts are parsed in pieces, a line break ends a sentence."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from polyg.nlp.pipeline import PIECE_CHARS, PINNED, NLPModelError, model_path, pieces, pipeline, verify


def test_the_installed_model_is_the_pinned_one() -> None:
    verify(model_path())


def test_a_changed_weights_file_fails_loudly(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(model_path(), copy)
    weights = copy / "ner" / "model"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(NLPModelError, match="ner/model"):
        verify(copy)


def test_a_missing_weights_file_fails_loudly(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(model_path(), copy)
    (copy / "parser" / "model").unlink()
    with pytest.raises(NLPModelError, match="not found"):
        verify(copy)
    assert set(PINNED) >= {"parser/model", "ner/model", "tagger/model", "tok2vec/model"}


def test_long_texts_are_cut_at_line_breaks_or_sentence_ends_never_inside_a_word() -> None:
    text = ("The deploy failed because the cache was cold. " * 60) + "\n" + ("word " * 900)
    cut = pieces(text)
    assert "".join(cut) == text
    assert all(len(p) <= PIECE_CHARS for p in cut)
    assert all(p.endswith((". ", "\n", " ")) for p in cut[:-1])


def test_a_line_break_ends_a_sentence_and_a_long_text_parses_whole() -> None:
    doc = pipeline().parse("uses redis\ndepends on postgres\nAlice leads the Growth team")
    assert [s.text.strip() for s in doc.sents] == ["uses redis", "depends on postgres", "Alice leads the Growth team"]
    long = "Alice restarted the billing API on Monday. " * 120
    assert len(long) > PIECE_CHARS
    assert len(list(pipeline().parse(long).sents)) == 120
