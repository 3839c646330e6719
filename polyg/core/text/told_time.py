"""The time a sentence of a memory states, said as a date read from when the memory was told.

A memory keeps the words it was told with ("I went there yesterday", "last week", "two weekends
ago"); its own time is when it was said. An answer to "when" says the date those words name,
at the precision they have: a day ("yesterday" told on 8 May 2023 is 2023-05-07), a week or a
weekday relative to the telling ("the week before 2023-06-09", "the Friday before 2023-07-15":
the words do not say which day of the week), a month ("last month": April 2023), a year ("last
year": 2022). A date written out ("on 3 March 2023", "in August 2022", "since 2016") is
said as written. Words that name no time ("recently", "a while ago") give nothing.

This module finds the expressions and decides their precision; the dates are read by the
parser every time phrase goes through (`polyg.core.text.time.parse_time`: dateparser, with its
fast paths for the common phrases), except two rules a phrase parser does not apply: a month
named without a year is the one nearest the telling (not the most recent past one), and "last
August" is the August of the year before unless August is still to come.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from polyg.core.text.time import parse_time
from polyg.errors import InvalidParams

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY = r"(?P<wd>mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)(?:day|nesday|urday|sday|day)?\.?"
# How an answer names a month (not the locale's names).
_MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_MONTH = r"(?P<mon>jan|feb|mar|apr|may|jun|jul|aug|sept?|oct|nov|dec)[a-z]*\.?"
_NUMBERS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split(),
    )
}
_NUMBERS.update({"a": 1, "an": 1, "a couple of": 2, "couple of": 2, "a couple": 2})
_COUNT = r"(?P<n>\d{1,2}|a couple of|couple of|a couple|an?|" + "|".join(_NUMBERS) + ")"
_DAY_NUM = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PAST = r"(?:last|this past|past|previous)"
# Any day will do as the reference of a phrase that names its month by itself.
_ANY_DAY = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class ToldTime:
    """A time expression of a sentence and the date it names, as an answer says it."""

    words: str  # as written in the sentence ("last Friday")
    said: str  # the date it names ("the Friday before 15 July 2023")
    precision: str  # day, week, month or year
    start: date  # the first day it may name


def day_text(day: date) -> str:
    """A day as recall's answers write one (ISO 8601, as the timeline and facts do)."""
    return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"


def month_text(year: int, month: int) -> str:
    return f"{_MONTH_NAMES[month - 1]} {year}"


def _count(match: re.Match[str]) -> int:
    word = match.group("n").lower()
    return int(word) if word.isdigit() else _NUMBERS.get(word, 1)


def _weekday(match: re.Match[str]) -> str:
    abbrev = match.group("wd").lower()[:3]
    return next(d for d in _WEEKDAYS if d.startswith(abbrev)).capitalize()


def _date(phrase: str, told: date) -> date:
    """The day a phrase that always names one ("yesterday", "3 months ago") names."""
    day = _day_named(phrase, told)
    if day is None:
        raise ValueError(f"{phrase!r} names no day")
    return day


# Memories of one conversation share their telling's day and repeat their phrases; a phrase
# that names no day ("31 June 2023") costs dateparser milliseconds, and is remembered too.
@functools.lru_cache(maxsize=1024)
def _day_named(phrase: str, told: date) -> date | None:
    """The day `phrase` names read from the telling, by the parser every time phrase goes
    through (`polyg.core.text.time`: dateparser, and its fast paths for the common phrases);
    None when it names none ("31 June 2023")."""
    try:
        return parse_time(phrase, reference=datetime.combine(told, time(), UTC)).at.date()
    except InvalidParams:
        return None


@functools.lru_cache(maxsize=64)
def _month_number(name: str) -> int:
    """The month a month's name or abbreviation names ("Sept." is 9)."""
    return parse_time(name, reference=_ANY_DAY).at.month


def _nearest_year(told: date, month: int) -> int:
    """The year of the named month nearest the telling ("in June" told in May 2023 is June
    2023; told in January 2024, it is June 2023 when that is nearer): not the most recent past
    one, as a phrase parser reads a month without a year."""
    candidates = (told.year - 1, told.year, told.year + 1)
    return min(candidates, key=lambda y: abs((y * 12 + month) - (told.year * 12 + told.month)))


Reader = Callable[[re.Match[str], date], ToldTime]


def _on(words: str, day: date) -> ToldTime:
    return ToldTime(words, day_text(day), "day", day)


def _in_month(words: str, year: int, month: int) -> ToldTime:
    return ToldTime(words, month_text(year, month), "month", date(year, month, 1))


def _in_year(words: str, year: int) -> ToldTime:
    return ToldTime(words, str(year), "year", date(year, 1, 1))


def _day(phrase: str) -> Reader:
    """The day the words name, read as `phrase` says it ("last night": "yesterday")."""
    return lambda m, told: _on(m.group(0), _date(phrase, told))


def _relative(phrase: str, days_back: int) -> Reader:
    """A span the words place only relative to the telling ("the week before 9 June 2023");
    `days_back`: how far before the telling it may start."""
    return lambda m, told: ToldTime(
        m.group(0), f"{phrase} {day_text(told)}", "week", told - timedelta(days=max(days_back, 0))
    )


def _month(phrase: str) -> Reader:
    def read(m: re.Match[str], told: date) -> ToldTime:
        day = _date(phrase, told)
        return _in_month(m.group(0), day.year, day.month)

    return read


def _year(phrase: str) -> Reader:
    return lambda m, told: _in_year(m.group(0), _date(phrase, told).year)


def _days_ago(m: re.Match[str], told: date) -> ToldTime:
    return _on(m.group(0), _date(f"{_count(m)} days ago", told))


def _units_ago(unit: str) -> Reader:
    """ "two weekends ago" told on 17 July 2023: "two weekends before 17 July 2023"."""

    def read(m: re.Match[str], told: date) -> ToldTime:
        n, word = _count(m), m.group("n")
        counted = f"the {unit}" if n == 1 else f"{word} {unit}s"
        start = told - timedelta(weeks=n + 1)
        return ToldTime(m.group(0), f"{counted} before {day_text(told)}", "week", start)

    return read


def _months_ago(m: re.Match[str], told: date) -> ToldTime:
    day = _date(f"{_count(m)} months ago", told)
    return _in_month(m.group(0), day.year, day.month)


def _years_ago(m: re.Match[str], told: date) -> ToldTime:
    return _in_year(m.group(0), _date(f"{_count(m)} years ago", told).year)


def _past_weekday(m: re.Match[str], told: date) -> ToldTime:
    said = f"the {_weekday(m)} before {day_text(told)}"
    return ToldTime(m.group(0), said, "week", told - timedelta(days=7))


def _next_weekday(m: re.Match[str], told: date) -> ToldTime:
    said = f"the {_weekday(m)} after {day_text(told)}"
    return ToldTime(m.group(0), said, "week", told + timedelta(days=1))


def _year_of(m: re.Match[str], told: date, month: int) -> int:
    """The year the words give, else the one nearest the telling ("on 5 Jan")."""
    year = m.groupdict().get("year")
    return int(year) if year else _nearest_year(told, month)


def _full_date(m: re.Match[str], told: date) -> ToldTime:
    month = _month_number(m.group("mon"))
    year = _year_of(m, told, month)
    # As ISO 8601, read without dateparser (month names are: `_month_number`).
    day = _day_named(f"{year:04d}-{month:02d}-{int(m.group('day')):02d}", told)
    return _on(m.group(0), day) if day is not None else _in_month(m.group(0), year, month)  # "31 June"


def _named_month(m: re.Match[str], told: date) -> ToldTime:
    month = _month_number(m.group("mon"))
    return _in_month(m.group(0), _year_of(m, told, month), month)


def _last_named_month(m: re.Match[str], told: date) -> ToldTime:
    month = _month_number(m.group("mon"))
    return _in_month(m.group(0), told.year if month < told.month else told.year - 1, month)


def _named_year(m: re.Match[str], told: date) -> ToldTime:
    return _in_year(m.group(0), int(m.group("year")))


def _iso(m: re.Match[str], told: date) -> ToldTime:
    day = _day_named(m.group(0), told)
    if day is None:  # "2023-02-30"
        return _in_month(m.group(0), int(m.group(0)[:4]), int(m.group(0)[5:7]) or 1)
    return _on(m.group(0), day)


# Most specific first; the first that matches at a place wins (a longer phrase there first).
# Each with the words one of which it cannot match without ("#": a digit): a form is tried only
# on a text holding one, as reading every form over every sentence costs milliseconds.
_FORMS: tuple[tuple[re.Pattern[str], Reader, tuple[str, ...]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), reader, cues)
    for pattern, reader, cues in (
        (r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b", _iso, ("#",)),
        (rf"\b{_DAY_NUM}(?: of)? {_MONTH},? {_YEAR}\b", _full_date, ("#",)),
        (rf"\b{_MONTH} {_DAY_NUM},? {_YEAR}\b", _full_date, ("#",)),
        (
            rf"\b(?:on )?(?:the )?{_DAY_NUM}(?: of)? (?P<mon>jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)[a-z]*\b",
            _full_date,
            ("#",),
        ),
        (rf"\b{_MONTH},? {_YEAR}\b", _named_month, ("#",)),
        (r"\b(?:the )?day before yesterday\b", _day("2 days ago"), ("yesterday",)),
        (
            r"\b(?:yesterday|last night)\b",
            _day("yesterday"),
            (
                "yesterday",
                "last night",
            ),
        ),
        (r"\b(?:tomorrow)\b", _day("in 1 day"), ("tomorrow",)),
        (
            r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b",
            _day("today"),
            (
                "today",
                "tonight",
                "this morning",
                "this afternoon",
                "this evening",
            ),
        ),
        (rf"\b{_COUNT} days? ago\b", _days_ago, ("ago",)),
        (rf"\b{_PAST} weekend\b", _relative("the weekend before", 9), ("weekend",)),
        (r"\bthis weekend\b", _relative("the weekend of", 0), ("weekend",)),
        (r"\bnext weekend\b", _relative("the weekend after", -7), ("weekend",)),
        (rf"\b{_PAST} week\b", _relative("the week before", 13), ("week",)),
        (r"\bthis week\b", _relative("the week of", 6), ("week",)),
        (r"\bnext week\b", _relative("the week after", -7), ("week",)),
        (rf"\b{_COUNT} weekends? ago\b", _units_ago("weekend"), ("ago",)),
        (rf"\b{_COUNT} weeks? ago\b", _units_ago("week"), ("ago",)),
        (
            rf"\b{_PAST} {_WEEKDAY}(?=\W|$)",
            _past_weekday,
            (
                "last",
                "past",
                "previous",
            ),
        ),
        (rf"\bnext {_WEEKDAY}(?=\W|$)", _next_weekday, ("next",)),
        (r"\bon (?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", _past_weekday, ("day",)),
        (rf"\b{_PAST} month\b", _month("last month"), ("month",)),
        (r"\bthis month\b", _month("this month"), ("month",)),
        (r"\bnext month\b", _month("in 1 month"), ("month",)),
        (rf"\b{_COUNT} months? ago\b", _months_ago, ("ago",)),
        (rf"\b{_PAST} year\b", _year("last year"), ("year",)),
        (r"\bthis year\b", _year("this year"), ("year",)),
        (r"\bnext year\b", _year("in 1 year"), ("year",)),
        (rf"\b{_COUNT} years? ago\b", _years_ago, ("ago",)),
        (rf"\blast {_MONTH}(?=\W|$)", _last_named_month, ("last",)),
        # "May" alone is also a verb: a month only after a preposition or with a year.
        (
            rf"\b(?:in|during|since|this|next|early|late|mid)[ -]{_MONTH}(?:,? {_YEAR})?(?=\W|$)",
            _named_month,
            (
                "in",
                "during",
                "since",
                "this",
                "next",
                "early",
                "late",
                "mid",
            ),
        ),
        (rf"\b(?:in|since|from|during|back in|of) {_YEAR}\b", _named_year, ("#",)),
    )
)


def told_times(text: str, told_at: datetime | date) -> list[ToldTime]:
    """The time expressions of `text`, left to right (overlapping finds: the first form's),
    each with the date it names read from `told_at`."""
    told = told_at.date() if isinstance(told_at, datetime) else told_at
    taken: list[tuple[int, int, ToldTime]] = []
    lowered = text.lower()
    digits = any(c.isdigit() for c in text)
    for pattern, reader, cues in _FORMS:
        if not any((digits if cue == "#" else cue in lowered) for cue in cues):
            continue
        for m in pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end, _ in taken):
                continue
            taken.append((m.start(), m.end(), reader(m, told)))
    return [found for _, _, found in sorted(taken, key=lambda t: t[0])]
