"""`polyg.core.memory.temporal.stored_instant`: a stored time's instant, as `parse_instant` reads it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from polyg.core.memory.temporal import stored_instant
from polyg.core.text.time import format_utc, parse_instant


@pytest.mark.parametrize("text", ["2025-01-06T09:00:00.000000Z", "2025-01-06T09:00:00Z", "2024-02-29T23:59:59.5Z"])
def test_stored_times_read_as_parse_instant_reads_them(text: str) -> None:
    assert stored_instant(text) == parse_instant(text)
    assert stored_instant(text) == parse_instant(text)  # once more, from the cache


def test_what_format_utc_writes_is_read_back() -> None:
    at = datetime(2025, 3, 30, 1, 30, 12, 345678, tzinfo=UTC)
    assert stored_instant(format_utc(at)) == at


def test_other_texts_are_parsed_as_parse_instant_parses_them() -> None:
    assert stored_instant("2025-01-06") == parse_instant("2025-01-06")
