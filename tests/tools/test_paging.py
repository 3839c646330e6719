"""`shaping.Page` and `fit_page`: where the next page starts and what a cut page says."""

from __future__ import annotations

from polyg.core import limits
from polyg.tools import shaping


def test_a_page_with_more_to_follow_says_where_the_next_starts() -> None:
    assert shaping.Page(["a", "b", "c"], 10, True).next_offset == 13
    assert shaping.Page(["a", "b", "c"], 10, False).next_offset is None
    assert shaping.Page([], 0, False).note("any_tool") is None


def test_a_page_the_budget_cut_keeps_what_fits_and_says_how_to_read_on() -> None:
    item = "x" * 1000
    total = limits.RESPONSE_BUDGET // 1000 + 50
    result = {"items": [item] * total}
    page = shaping.fit_page(result, "items", offset=7, has_more=False)
    shown = len(result["items"])
    assert page.items is result["items"] and 0 < shown < total
    assert page.cut == total - shown
    assert page.has_more and page.next_offset == 7 + shown
    assert limits.size(result) <= limits.RESPONSE_BUDGET
    note = page.note("query_timeline")
    assert note is not None and f"offset {7 + shown}" in note and f"Only {shown} of the {shown + page.cut}" in note


def test_a_single_item_over_the_budget_still_moves_paging_on() -> None:
    result = {"items": ["y" * (limits.RESPONSE_BUDGET * 2), "z"]}
    page = shaping.fit_page(result, "items", offset=0, has_more=False)
    assert len(page.items) == 1 and page.cut == 1 and page.next_offset == 1


def test_an_uncut_page_keeps_the_stores_has_more() -> None:
    result = {"items": ["a", "b"]}
    assert shaping.fit_page(result, "items", offset=4, has_more=True).next_offset == 6
    assert shaping.fit_page(result, "items", offset=4, has_more=False).next_offset is None
    assert result == {"items": ["a", "b"]}
