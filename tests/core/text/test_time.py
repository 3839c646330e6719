"""polyg.core.text.time: clocks, ISO and natural-language parsing, ranges, validity windows, zones."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from polyg.core.text import time as time_mod
from polyg.core.text.time import (
    SYSTEM_CLOCK,
    FixedClock,
    Interval,
    format_utc,
    parse_instant,
    parse_range,
    parse_time,
    resolve_zone,
    to_utc,
    validity_window,
)
from polyg.errors import InvalidParams

# Thursday 14 March 2024, 10:00 UTC.
THURSDAY = datetime(2024, 3, 14, 10, 0, tzinfo=UTC)
BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def span(text: str, reference: datetime = THURSDAY, **kw: object) -> tuple[datetime | None, datetime | None]:
    r = parse_range(text, reference=reference, **kw)  # type: ignore[arg-type]
    return r.start, r.end


# -- clocks ----------------------------------------------------------------------------------


def test_system_clock_is_aware_utc_and_current() -> None:
    before = datetime.now(UTC)
    now = SYSTEM_CLOCK.now()
    assert now.tzinfo is UTC
    assert before <= now <= datetime.now(UTC)


def test_fixed_clock_stays_put_until_moved() -> None:
    clock = FixedClock("2024-03-14T10:00:00Z")
    assert clock.now() == THURSDAY
    assert clock.now() == THURSDAY
    assert clock.advance(timedelta(hours=2)) == utc(2024, 3, 14, 12)
    clock.set(datetime(2024, 1, 1, 12, tzinfo=BERLIN))
    assert clock.now() == utc(2024, 1, 1, 11)
    assert clock.now().tzinfo is UTC
    assert repr(clock) == "FixedClock('2024-01-01T11:00:00.000000Z')"


def test_relative_phrases_use_the_injected_clock_when_no_reference_is_given() -> None:
    clock = FixedClock(THURSDAY)
    assert parse_instant("yesterday 14:30", clock=clock) == utc(2024, 3, 13, 14, 30)
    clock.advance(timedelta(days=7))
    assert parse_instant("yesterday 14:30", clock=clock) == utc(2024, 3, 20, 14, 30)


# -- ISO -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "at", "granularity", "end"),
    [
        ("2024-03-05", utc(2024, 3, 5), "day", utc(2024, 3, 6)),
        ("2023-03", utc(2023, 3, 1), "month", utc(2023, 4, 1)),
        ("2023", utc(2023, 1, 1), "year", utc(2024, 1, 1)),
        ("2024-03-05T14:30:00Z", utc(2024, 3, 5, 14, 30), "second", utc(2024, 3, 5, 14, 30, 1)),
        ("2024-03-05T14:30", utc(2024, 3, 5, 14, 30), "minute", utc(2024, 3, 5, 14, 31)),
        ("2024-03-05T14:30:00+02:00", utc(2024, 3, 5, 12, 30), "second", utc(2024, 3, 5, 12, 30, 1)),
        ("2024-03-05 14:30:15.25-05:00", utc(2024, 3, 5, 19, 30, 15, 250000), "second", utc(2024, 3, 5, 19, 30, 16)),
    ],
)
def test_iso_forms(text: str, at: datetime, granularity: str, end: datetime) -> None:
    parsed = parse_time(text, reference=THURSDAY)
    assert parsed.at == at
    assert parsed.granularity == granularity
    assert parsed.period.end == end
    assert parsed.period.contains(parsed.at)


def test_naive_iso_is_read_in_the_reference_zone_and_explicit_offsets_win() -> None:
    ref = datetime(2024, 7, 1, 12, tzinfo=BERLIN)  # CEST, UTC+2
    assert parse_instant("2024-07-01T09:00", reference=ref) == utc(2024, 7, 1, 7)
    assert parse_instant("2024-07-01T09:00Z", reference=ref) == utc(2024, 7, 1, 9)
    assert parse_instant("2024-07-01T09:00", reference=ref, tz="UTC") == utc(2024, 7, 1, 9)
    assert parse_instant("2024-07-01T09:00", reference=THURSDAY, tz="America/New_York") == utc(2024, 7, 1, 13)
    # A fixed-offset reference zone is just that offset.
    plus5 = datetime(2024, 7, 1, 12, tzinfo=timezone(timedelta(hours=5)))
    assert parse_instant("2024-07-01T09:00", reference=plus5) == utc(2024, 7, 1, 4)


def test_dates_and_datetimes_are_accepted_as_objects() -> None:
    assert parse_instant(date(2024, 3, 5), tz="Europe/Berlin") == utc(2024, 3, 4, 23)
    assert parse_instant(datetime(2024, 3, 5, 12)) == utc(2024, 3, 5, 12)
    assert to_utc(datetime(2024, 3, 5, 12, tzinfo=BERLIN)) == utc(2024, 3, 5, 11)


def test_stored_form_is_fixed_width_utc_and_sorts_as_time() -> None:
    times = [utc(2024, 3, 5, 9, 5, 1), datetime(2024, 3, 5, 10, tzinfo=BERLIN), utc(2023, 12, 31, 23, 59, 59, 999999)]
    texts = [format_utc(t) for t in times]
    assert texts[1] == "2024-03-05T09:00:00.000000Z"
    assert {len(t) for t in texts} == {27}
    assert sorted(texts) == [format_utc(t) for t in sorted(times)]
    assert parse_instant(texts[0]) == times[0]


# -- phrases ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "at", "granularity"),
    [
        ("yesterday 14:30", utc(2024, 3, 13, 14, 30), "minute"),
        ("yesterday at 2:30pm", utc(2024, 3, 13, 14, 30), "minute"),
        # Full hours: dateparser itself reports these as whole days.
        ("yesterday 14:00", utc(2024, 3, 13, 14), "minute"),
        ("yesterday at 9am", utc(2024, 3, 13, 9), "minute"),
        ("yesterday midnight", utc(2024, 3, 13), "minute"),
        ("yesterday", utc(2024, 3, 13), "day"),
        ("today", utc(2024, 3, 14), "day"),
        ("tomorrow", utc(2024, 3, 15), "day"),
        ("the day before yesterday", utc(2024, 3, 12), "day"),
        ("last Tuesday", utc(2024, 3, 12), "day"),
        ("Tuesday", utc(2024, 3, 12), "day"),
        ("next Friday", utc(2024, 3, 15), "day"),
        ("in March 2023", utc(2023, 3, 1), "month"),
        ("March 2023", utc(2023, 3, 1), "month"),
        ("last month", utc(2024, 2, 1), "month"),
        ("last year", utc(2023, 1, 1), "year"),
        ("last week", utc(2024, 3, 4), "week"),
        ("Jan 5", utc(2024, 1, 5), "day"),
        ("5 Jan 2023 3pm", utc(2023, 1, 5, 15), "minute"),
        ("03/05/2023", utc(2023, 3, 5), "day"),
        ("noon yesterday", utc(2024, 3, 13, 12), "minute"),
    ],
)
def test_phrases_resolve_against_the_reference(text: str, at: datetime, granularity: str) -> None:
    parsed = parse_time(text, reference=THURSDAY)
    assert (parsed.at, parsed.granularity) == (at, granularity)


def test_a_month_without_a_day_is_its_first_day_not_todays_day_of_month() -> None:
    # dateparser's default PREFER_DAY_OF_MONTH="current" would give 2023-03-14 here.
    assert parse_instant("March 2023", reference=THURSDAY) == utc(2023, 3, 1)
    assert parse_instant("in 2023", reference=THURSDAY) == utc(2023, 1, 1)


def test_a_month_name_alone_is_the_most_recent_past_one() -> None:
    # In February 2024, "March" is March 2023 (memory looks back), not the coming March.
    assert parse_instant("March", reference=utc(2024, 2, 10)) == utc(2023, 3, 1)
    assert parse_instant("March", reference=THURSDAY) == utc(2024, 3, 1)


def test_a_weekday_said_on_that_weekday_is_a_week_ago() -> None:
    tuesday = utc(2024, 3, 12, 9)
    assert parse_instant("last Tuesday", reference=tuesday) == utc(2024, 3, 5)
    assert parse_instant("Tuesday", reference=tuesday) == utc(2024, 3, 5)
    assert parse_instant("last Monday", reference=tuesday) == utc(2024, 3, 11)


@pytest.mark.parametrize(
    ("text", "at", "granularity"),
    [
        ("two weeks ago", utc(2024, 2, 29, 10), "week"),
        ("2 weeks ago", utc(2024, 2, 29, 10), "week"),
        ("a week ago", utc(2024, 3, 7, 10), "week"),
        ("3 hours ago", utc(2024, 3, 14, 7), "hour"),
        ("an hour ago", utc(2024, 3, 14, 9), "hour"),
        ("45 minutes ago", utc(2024, 3, 14, 9, 15), "minute"),
        ("a couple of days ago", utc(2024, 3, 12, 10), "day"),
        ("in 2 days", utc(2024, 3, 16, 10), "day"),
        ("3 days from now", utc(2024, 3, 17, 10), "day"),
        ("a month ago", utc(2024, 2, 14, 10), "day"),
        ("one year ago", utc(2023, 3, 14, 10), "day"),
    ],
)
def test_shifts_are_exact_instants(text: str, at: datetime, granularity: str) -> None:
    parsed = parse_time(text, reference=THURSDAY)
    assert (parsed.at, parsed.granularity) == (at, granularity)
    assert parsed.period.contains(parsed.at)


def test_month_shifts_clamp_to_the_last_day() -> None:
    assert parse_instant("a month ago", reference=utc(2024, 3, 31, 8)) == utc(2024, 2, 29, 8)
    assert parse_instant("1 year ago", reference=utc(2024, 2, 29, 8)) == utc(2023, 2, 28, 8)


def test_case_and_spacing_do_not_matter() -> None:
    assert parse_instant("  YESTERDAY   14:30 ", reference=THURSDAY) == utc(2024, 3, 13, 14, 30)
    assert parse_instant("Two Weeks Ago", reference=THURSDAY) == utc(2024, 2, 29, 10)


# -- ranges ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("in March 2023", utc(2023, 3, 1), utc(2023, 4, 1)),
        ("during March 2023", utc(2023, 3, 1), utc(2023, 4, 1)),
        ("2023", utc(2023, 1, 1), utc(2024, 1, 1)),
        ("last week", utc(2024, 3, 4), utc(2024, 3, 11)),
        ("this week", utc(2024, 3, 11), utc(2024, 3, 18)),
        ("last month", utc(2024, 2, 1), utc(2024, 3, 1)),
        ("yesterday", utc(2024, 3, 13), utc(2024, 3, 14)),
        ("on Monday", utc(2024, 3, 11), utc(2024, 3, 12)),
        ("since Monday", utc(2024, 3, 11), THURSDAY),
        ("since 2024-03-01", utc(2024, 3, 1), THURSDAY),
        ("from last Tuesday", utc(2024, 3, 12), THURSDAY),
        ("last 3 days", utc(2024, 3, 11, 10), THURSDAY),
        ("the past two weeks", utc(2024, 2, 29, 10), THURSDAY),
        ("past week", utc(2024, 3, 7, 10), THURSDAY),
        ("last 24 hours", utc(2024, 3, 13, 10), THURSDAY),
        ("last hour", utc(2024, 3, 14, 9), THURSDAY),
        ("between March 2023 and May 2023", utc(2023, 3, 1), utc(2023, 6, 1)),
        ("from Monday to Wednesday", utc(2024, 3, 11), utc(2024, 3, 14)),
        ("from 2024-01-01 until 2024-01-31", utc(2024, 1, 1), utc(2024, 2, 1)),
        ("until March 2023", None, utc(2023, 4, 1)),
        ("before 2024", None, utc(2024, 1, 1)),
        ("after March 2023", utc(2023, 4, 1), None),
        ("two weeks ago", utc(2024, 2, 26), utc(2024, 3, 4)),
        ("yesterday 14:30", utc(2024, 3, 13, 14, 30), utc(2024, 3, 13, 14, 31)),
    ],
)
def test_ranges(text: str, start: datetime | None, end: datetime | None) -> None:
    assert span(text) == (start, end)


def test_range_errors() -> None:
    with pytest.raises(InvalidParams, match="ends before it starts"):
        parse_range("between 2024-05-01 and 2024-03-01", reference=THURSDAY)
    with pytest.raises(InvalidParams, match="starts after the reference time"):
        parse_range("since tomorrow", reference=THURSDAY)
    with pytest.raises(InvalidParams, match="could not read 'someday'"):
        parse_range("since someday", reference=THURSDAY)


# -- time zones and DST ----------------------------------------------------------------------


def test_yesterday_is_the_local_day_in_the_reference_zone() -> None:
    ref = datetime(2024, 3, 14, 0, 30, tzinfo=BERLIN)  # still 13 March in UTC
    assert span("yesterday", ref) == (utc(2024, 3, 12, 23), utc(2024, 3, 13, 23))
    assert span("yesterday", ref, tz="UTC") == (utc(2024, 3, 12), utc(2024, 3, 13))


def test_a_day_across_spring_forward_is_23_hours_and_across_fall_back_25() -> None:
    spring = parse_range("2024-03-31", reference=THURSDAY, tz="Europe/Berlin")
    assert (spring.start, spring.end) == (utc(2024, 3, 30, 23), utc(2024, 3, 31, 22))
    assert spring.duration == timedelta(hours=23)
    autumn = parse_range("2024-10-27", reference=THURSDAY, tz="Europe/Berlin")
    assert autumn.duration == timedelta(hours=25)


def test_wall_clock_phrases_keep_local_time_across_dst_and_hour_shifts_are_exact() -> None:
    # Monday after the US spring-forward (Sunday 10 March 2024), 09:00 EDT.
    ref = datetime(2024, 3, 11, 9, tzinfo=NEW_YORK)
    # "yesterday 09:00" is 09:00 EDT on Sunday, and "2 days ago" 09:00 EST on Saturday.
    assert parse_instant("yesterday 09:00", reference=ref) == utc(2024, 3, 10, 13)
    assert parse_instant("2 days ago", reference=ref) == utc(2024, 3, 9, 14)
    # 48 hours ago is exactly 48 hours: 08:00 EST on Saturday's wall clock.
    assert parse_instant("48 hours ago", reference=ref) == utc(2024, 3, 9, 13)


def test_nonexistent_local_times_move_forward_and_ambiguous_ones_take_the_first() -> None:
    # 02:30 on 10 March 2024 does not exist in New York: it is read as 03:30 EDT.
    assert parse_instant("2024-03-10T02:30", tz="America/New_York", reference=THURSDAY) == utc(2024, 3, 10, 7, 30)
    # 01:30 on 3 November 2024 happens twice: the first (EDT, UTC-4) is taken.
    assert parse_instant("2024-11-03T01:30", tz="America/New_York", reference=THURSDAY) == utc(2024, 11, 3, 5, 30)


def test_phrases_with_a_named_zone_keep_it() -> None:
    assert parse_instant("yesterday 14:30 UTC", reference=datetime(2024, 3, 14, 10, tzinfo=BERLIN)) == utc(
        2024, 3, 13, 14, 30
    )


def test_zone_resolution_and_unknown_zones() -> None:
    assert resolve_zone(None, None) is UTC
    assert resolve_zone("utc") is UTC
    assert resolve_zone(None, datetime(2024, 1, 1, tzinfo=BERLIN)) is BERLIN
    assert resolve_zone("Europe/Berlin", datetime(2024, 1, 1, tzinfo=NEW_YORK)) == BERLIN
    with pytest.raises(InvalidParams, match="unknown time zone 'Mars/Olympus'") as err:
        resolve_zone("Mars/Olympus")
    assert err.value.code == 4002
    with pytest.raises(InvalidParams, match="unknown time zone"):
        parse_instant("yesterday", tz="../../etc/passwd", reference=THURSDAY)
    with pytest.raises(InvalidParams, match="unknown time zone"):
        resolve_zone("a" + "/b" * 2000)  # was a RecursionError in zoneinfo


def test_a_naive_reference_is_read_in_tz() -> None:
    naive_ref = datetime(2024, 3, 14, 10)
    assert parse_instant("yesterday 09:00", reference=naive_ref) == utc(2024, 3, 13, 9)
    assert parse_instant("yesterday 09:00", reference=naive_ref, tz="Europe/Berlin") == utc(2024, 3, 13, 8)


# -- unreadable input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "garbage xyz",
        "",
        "   ",
        "5",
        "12",
        "3.5",
        "the day after never",
        "x" * 101,
        "2024-02-30",
        "2024-13-01",  # dateparser alone reads this as 13 January
        "2024-13",
        "2024-03-05T25:00",
        # Past the end of what a datetime can hold once converted or extended to a period.
        "9999",
        "9999-12-31T23:59:59Z",
        "9999 at",
    ],
)
def test_unreadable_input_is_invalid_params(text: str) -> None:
    with pytest.raises(InvalidParams) as err:
        parse_instant(text, reference=THURSDAY)
    assert err.value.code == 4002
    assert "ISO 8601" in err.value.message


@pytest.mark.parametrize("text", ["9999", "after 9999-12-31T23:59:59Z", "10000 years ago"])
def test_out_of_range_ranges_are_invalid_params(text: str) -> None:
    with pytest.raises(InvalidParams, match="could not read"):
        parse_range(text, reference=THURSDAY)


def test_the_error_quotes_at_most_80_characters_of_the_input() -> None:
    with pytest.raises(InvalidParams) as err:
        parse_instant("nonsense " * 11, reference=THURSDAY)
    assert len(err.value.details["value"]) <= 86


@pytest.mark.parametrize("text", ["since Monday", "after March 2023", "last 3 days", "between 2023 and 2024"])
def test_a_span_is_not_read_as_an_instant(text: str) -> None:
    # dateparser alone reads "after March 2023" as 1 March 2023: the opposite of what was said.
    with pytest.raises(InvalidParams, match="names a span of time"):
        parse_instant(text, reference=THURSDAY)
    with pytest.raises(InvalidParams, match="names a span of time"):
        validity_window(text, reference=THURSDAY)


def test_non_text_input_is_invalid_params() -> None:
    with pytest.raises(InvalidParams, match="must be text"):
        parse_time(42, reference=THURSDAY)  # type: ignore[arg-type]


# -- intervals and validity windows ----------------------------------------------------------


def test_interval_is_half_open_and_open_ended() -> None:
    march = Interval(utc(2023, 3, 1), utc(2023, 4, 1))
    assert march.contains(utc(2023, 3, 1))
    assert march.contains(utc(2023, 3, 31, 23, 59, 59))
    assert not march.contains(utc(2023, 4, 1))
    assert not march.contains(utc(2023, 2, 28))
    since = Interval(utc(2024, 1, 1))
    assert since.is_open and since.contains(utc(2999, 1, 1)) and not since.contains(utc(2023, 12, 31))
    assert Interval().contains(utc(1900, 1, 1))
    assert Interval(None, utc(2024, 1, 1)).duration is None
    assert march.duration == timedelta(days=31)


def test_interval_normalises_to_utc_and_refuses_an_end_before_its_start() -> None:
    window = Interval(datetime(2024, 1, 1, 1, tzinfo=BERLIN), datetime(2024, 1, 1, 12))
    assert window.start == utc(2024, 1, 1) and window.start.tzinfo is UTC
    assert window.end == utc(2024, 1, 1, 12)
    with pytest.raises(InvalidParams, match="before its start") as err:
        Interval(utc(2024, 2, 1), utc(2024, 1, 1))
    assert err.value.code == 4002


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((utc(2024, 1, 1), utc(2024, 2, 1)), (utc(2024, 1, 15), utc(2024, 3, 1)), True),
        ((utc(2024, 1, 1), utc(2024, 2, 1)), (utc(2024, 2, 1), utc(2024, 3, 1)), False),  # touching
        ((utc(2024, 1, 1), None), (utc(2030, 1, 1), utc(2030, 2, 1)), True),
        ((None, utc(2024, 1, 1)), (utc(2024, 1, 1), None), False),
        ((None, None), (utc(2024, 1, 1), utc(2024, 1, 2)), True),
        ((utc(2024, 1, 1), utc(2024, 1, 1)), (None, None), False),  # empty
        ((utc(2024, 1, 10), utc(2024, 1, 20)), (utc(2024, 1, 1), utc(2024, 2, 1)), True),  # inside
    ],
)
def test_overlap(
    a: tuple[datetime | None, datetime | None], b: tuple[datetime | None, datetime | None], expected: bool
) -> None:
    assert Interval(*a).overlaps(Interval(*b)) is expected
    assert Interval(*b).overlaps(Interval(*a)) is expected


def test_covers_and_intersection() -> None:
    year = Interval(utc(2024, 1, 1), utc(2025, 1, 1))
    march = Interval(utc(2024, 3, 1), utc(2024, 4, 1))
    assert year.covers(march) and not march.covers(year)
    assert Interval().covers(year) and not year.covers(Interval(utc(2024, 6, 1)))
    assert year.intersection(Interval(utc(2024, 12, 1))) == Interval(utc(2024, 12, 1), utc(2025, 1, 1))
    assert year.intersection(Interval(utc(2025, 1, 1))) is None


def test_validity_windows_as_of_reads_and_closing() -> None:
    # The personal-knowledge scenario: Alice on Payment Service, then on Auth Service.
    payment = validity_window("2024-01-01", reference=THURSDAY)
    assert payment.is_open and payment.valid_at(THURSDAY)
    auth_start = parse_instant("2024-07-01")
    payment = payment.closed_at(auth_start)
    auth = validity_window(auth_start, reference=THURSDAY)
    now = utc(2024, 9, 1)
    assert not payment.valid_at(now) and auth.valid_at(now)
    as_of_june = parse_instant("2024-06-15")
    assert payment.valid_at(as_of_june) and not auth.valid_at(as_of_june)
    assert not payment.overlaps(auth)
    with pytest.raises(InvalidParams, match="before its start"):
        auth.closed_at(utc(2024, 1, 1))


def test_validity_window_defaults_and_errors() -> None:
    assert validity_window(None, reference=THURSDAY) == Interval(THURSDAY)
    assert validity_window(None, clock=FixedClock(THURSDAY)) == Interval(THURSDAY)
    window = validity_window("last Monday", "yesterday", reference=THURSDAY)
    assert window == Interval(utc(2024, 3, 11), utc(2024, 3, 13))
    with pytest.raises(InvalidParams, match=r"valid_to .* is before valid_from") as err:
        validity_window("2024-03-01", "2024-02-01", reference=THURSDAY)
    assert err.value.code == 4002
    with pytest.raises(InvalidParams, match="could not read"):
        validity_window("whenever", reference=THURSDAY)


def test_as_strings_round_trips_through_the_parser() -> None:
    window = Interval(utc(2024, 1, 1, 12, 30), None)
    start, end = window.as_strings()
    assert (start, end) == ("2024-01-01T12:30:00.000000Z", None)
    assert start is not None and parse_instant(start) == window.start


# -- the common phrases read without dateparser ----------------------------------------------


@pytest.mark.parametrize("phrase", sorted(time_mod._COMMON_PHRASES))
@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"])
def test_common_phrases_read_as_dateparser_reads_them(phrase: str, zone: str) -> None:
    rng = random.Random(f"{phrase}/{zone}")
    # Month and year ends, leap days, daylight-saving changes, and random instants.
    fixed = [
        datetime(2024, 2, 29, 12, tzinfo=UTC),
        datetime(2024, 3, 31, 1, 30, tzinfo=UTC),
        datetime(2023, 10, 29, 0, 30, tzinfo=UTC),
        datetime(2024, 1, 1, 0, 0, tzinfo=UTC),
        datetime(2023, 12, 31, 23, 59, tzinfo=UTC),
    ]
    randoms = [datetime(2000, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randrange(40 * 365 * 86400)) for _ in range(40)]
    for reference in fixed + randoms:
        ctx = time_mod._Context.make(reference, zone, SYSTEM_CLOCK)
        expected = time_mod._parse_phrase(phrase, ctx, original=phrase)
        assert time_mod._parse_point(phrase, ctx, original=phrase) == expected, (phrase, zone, reference)
        assert parse_range(phrase.title(), reference=reference, tz=zone) == expected.period
