"""The time a memory's words name, read from when it was told (polyg/core/text/told_time.py),
at the precision the words have."""

from __future__ import annotations

from datetime import date

import pytest

from polyg.core.text.told_time import told_times

TOLD = date(2023, 7, 17)  # a Monday


@pytest.mark.parametrize(
    ("text", "said", "precision"),
    [
        ("I went to a support group yesterday.", "2023-07-16", "day"),
        ("We had dinner together last night!", "2023-07-16", "day"),
        ("I passed the interview three days ago.", "2023-07-14", "day"),
        ("I joined a gym last week!", "the week before 2023-07-17", "week"),
        ("Guess what I did this week?", "the week of 2023-07-17", "week"),
        ("that roadtrip this past weekend was insane", "the weekend before 2023-07-17", "week"),
        ("We went camping two weekends ago.", "two weekends before 2023-07-17", "week"),
        ("Last Fri I took my kids to a pottery workshop.", "the Friday before 2023-07-17", "week"),
        ("I joined a new activist group last Tues.", "the Tuesday before 2023-07-17", "week"),
        ("We're thinking about going camping next month.", "August 2023", "month"),
        ("Last month I got hurt.", "June 2023", "month"),
        ("This book I read last year changed me.", "2022", "year"),
        ("I started surfing five years ago.", "2018", "year"),
        ("Last August I told you about it.", "August 2022", "month"),
        ("I have painted since 2016.", "2016", "year"),
        ("We met on 3 March 2023 at noon.", "2023-03-03", "day"),
        ("The release was on March 3, 2023.", "2023-03-03", "day"),
        ("It opened in May 2022.", "May 2022", "month"),
    ],
)
def test_words_name_a_time_read_from_the_telling(text: str, said: str, precision: str) -> None:
    found = told_times(text, TOLD)
    assert [(t.said, t.precision) for t in found][:1] == [(said, precision)]


def test_words_that_name_no_time_give_nothing() -> None:
    # "may" is a verb here; "recently" and "for 4 years" name no date.
    assert told_times("I may go hiking; recently I have known them for 4 years.", TOLD) == []


def test_each_expression_once_left_to_right() -> None:
    found = told_times("Yesterday I ran, and next week I swim.", TOLD)
    assert [t.words for t in found] == ["Yesterday", "next week"]
    assert found[0].start == date(2023, 7, 16)


def test_a_date_written_without_a_year_is_the_nearest_one() -> None:
    # The form of a day and a month with no year failed (IndexError: no such group "year").
    assert [(t.said, t.precision) for t in told_times("We met on 5 Jan.", TOLD)] == [("2023-01-05", "day")]
    assert [t.said for t in told_times("the 21st of dec", TOLD)] == ["2023-12-21"]
    assert [t.said for t in told_times("It was the 21st of dec.", date(2023, 1, 3))] == ["2022-12-21"]
    assert [(t.said, t.precision) for t in told_times("on 31 jun", TOLD)] == [("June 2023", "month")]
