"""Time: an injectable clock, dates read from ISO 8601 or English phrases, ranges and validity
windows.

The rules every caller can rely on:

- Times polyg stores and returns are aware datetimes in UTC; stored as text by `format_utc`
  (`2024-03-05T14:30:00.000000Z`), fixed width, so text order is time order.
- Relative phrases ("yesterday 14:30", "last Tuesday", "two weeks ago") are resolved against a
  reference time: the one the caller passes (a tool's `reference_time`), else the clock's now.
- Input that names no zone is read in `tz` when given (an IANA name such as
  "Europe/Berlin", or a tzinfo), else in the reference time's own zone, else UTC. Input with a
  zone or offset ("...Z", "+02:00", "PST") keeps it.
- Calendar phrases are computed on the wall clock of that zone: "yesterday" is the local day
  (23 or 25 hours long across a DST change), "2 days ago" keeps the local time of day. Phrases
  in hours, minutes or seconds ("3 hours ago") are exact elapsed time.
- A local time that does not exist (spring forward) moves forward by the gap; one that exists
  twice (fall back) is the first of the two (PEP 495 `fold=0`).
- Weeks start on Monday (ISO 8601). A day or month name without a year is the most recent
  past one ("Tuesday" said on a Tuesday is a week ago), unless the phrase says "next".
  Slashed dates are month first (03/05/2023 is 5 March); use ISO dates to avoid doubt.
- Ranges are half-open, [start, end); an end of None is open. "since X" ends at the reference
  time; "until X" includes the period X names; "before X" excludes it.
- Anything that cannot be read is `InvalidParams` (4002) saying which forms are accepted.

Range indexes for time filters: not on these strings. FalkorDB's range index answers `<` and
`<=` on a string property with every node or edge, so a filter that must use an index goes
through an integer twin in microseconds since the epoch (`Event.occurred_us`, a fact's
`valid_from_us`; `epoch_us`), indexed on the label, or per relationship
type for edges (`CREATE INDEX FOR ()-[r:works_on]-() ON (r.valid_from_us)`). Strings are fine
where no index is involved (an entity's own facts, read from its relationships).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any, Literal, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from polyg.errors import InvalidParams

if TYPE_CHECKING:
    from dateparser.date import DateDataParser

Granularity = Literal["second", "minute", "hour", "day", "week", "month", "year"]
TimeInput = str | datetime | date

MAX_EXPRESSION_CHARS = 100
_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_ACCEPTED = (
    "use ISO 8601 (2024-03-05, 2024-03-05T14:30:00Z) or an English phrase such as "
    "'yesterday 14:30', 'last Tuesday', 'in March 2023', 'two weeks ago', 'since Monday'"
)


# -- clocks --------------------------------------------------------------------------------


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, aware, in UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def __repr__(self) -> str:
        return "SystemClock()"


class FixedClock:
    """A clock that only moves when told to (tests, replays, imports with historical dates)."""

    def __init__(self, at: datetime | str) -> None:
        self._at = _as_utc_instant(at)

    def now(self) -> datetime:
        return self._at

    def set(self, at: datetime | str) -> None:
        self._at = _as_utc_instant(at)

    def advance(self, delta: timedelta) -> datetime:
        self._at += delta
        return self._at

    def __repr__(self) -> str:
        return f"FixedClock({format_utc(self._at)!r})"


SYSTEM_CLOCK: Clock = SystemClock()


def _as_utc_instant(at: datetime | str) -> datetime:
    return parse_instant(at) if isinstance(at, str) else to_utc(at)


# -- zones and formatting ------------------------------------------------------------------


# IANA names are at most about 30 characters (America/Argentina/ComodRivadavia: 32).
MAX_ZONE_NAME_CHARS = 64


def resolve_zone(tz: str | tzinfo | None = None, reference: datetime | None = None) -> tzinfo:
    """The zone naive input is read in: `tz`, else the reference's zone, else UTC."""
    if isinstance(tz, tzinfo):
        return tz
    if tz is not None:
        name = tz.strip()
        if name.upper() in ("UTC", "Z"):
            return UTC
        try:
            if len(name) > MAX_ZONE_NAME_CHARS:
                # zoneinfo imports one package per `/` of a name: a long one raised RecursionError.
                raise ValueError("longer than any time zone name")
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise InvalidParams(
                f"unknown time zone {_quote(name)}; use an IANA name such as 'Europe/Berlin' or 'UTC'",
                details={"tz": _quote(name)},
            ) from exc
    if reference is not None and reference.tzinfo is not None:
        return reference.tzinfo
    return UTC


def to_utc(value: datetime | date, tz: tzinfo = UTC) -> datetime:
    """`value` as an aware UTC datetime; naive values (and dates, at midnight) are read in `tz`."""
    if not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        value = value.replace(tzinfo=tz)
    return value.astimezone(UTC)


def format_utc(value: datetime) -> str:
    """The stored form: UTC, microseconds, `Z`; fixed width so text order is time order."""
    return to_utc(value).strftime(_FORMAT)


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_us(at: datetime) -> int:
    """Microseconds since the epoch: the integer events are filtered and ordered by (a naive
    time is read as UTC, as `format_utc` reads it)."""
    return (to_utc(at) - EPOCH) // timedelta(microseconds=1)


# -- intervals -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """A half-open span of time [start, end); None is an open end. Used both for ranges a query
    asks about and for validity windows of facts (valid_from = start, valid_to = end)."""

    start: datetime | None = None
    end: datetime | None = None

    def __post_init__(self) -> None:
        start = None if self.start is None else to_utc(self.start)
        end = None if self.end is None else to_utc(self.end)
        if start is not None and end is not None and end < start:
            raise InvalidParams(
                f"the end of a time window ({format_utc(end)}) is before its start ({format_utc(start)})",
                details={"start": format_utc(start), "end": format_utc(end)},
            )
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)

    @property
    def is_open(self) -> bool:
        """True while the window has no end (a fact still valid, a range up to any time)."""
        return self.end is None

    @property
    def duration(self) -> timedelta | None:
        return None if self.start is None or self.end is None else self.end - self.start

    def contains(self, at: datetime) -> bool:
        at = to_utc(at)
        return (self.start is None or self.start <= at) and (self.end is None or at < self.end)

    def valid_at(self, as_of: datetime) -> bool:
        """Whether a fact with this validity window held at `as_of` (point-in-time reads)."""
        return self.contains(as_of)

    def overlaps(self, other: Interval) -> bool:
        """Whether some instant lies in both (touching windows, [a, b) and [b, c), do not)."""
        starts_before_other_ends = self.start is None or other.end is None or self.start < other.end
        other_starts_before_end = other.start is None or self.end is None or other.start < self.end
        return starts_before_other_ends and other_starts_before_end and not self.is_empty and not other.is_empty

    def covers(self, other: Interval) -> bool:
        """Whether `other` lies wholly inside this window."""
        starts = self.start is None or (other.start is not None and self.start <= other.start)
        ends = self.end is None or (other.end is not None and other.end <= self.end)
        return starts and ends

    def intersection(self, other: Interval) -> Interval | None:
        if not self.overlaps(other):
            return None
        starts = [t for t in (self.start, other.start) if t is not None]
        ends = [t for t in (self.end, other.end) if t is not None]
        return Interval(max(starts) if starts else None, min(ends) if ends else None)

    @property
    def is_empty(self) -> bool:
        return self.start is not None and self.end is not None and self.start == self.end

    def closed_at(self, end: datetime) -> Interval:
        """This window ended at `end` (a newer fact replaced this one); refuses to end it before
        it started."""
        return Interval(self.start, end)

    def as_strings(self) -> tuple[str | None, str | None]:
        return (
            None if self.start is None else format_utc(self.start),
            None if self.end is None else format_utc(self.end),
        )


def validity_window(
    valid_from: TimeInput | None,
    valid_to: TimeInput | None = None,
    *,
    reference: datetime | None = None,
    tz: str | tzinfo | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> Interval:
    """A fact's window from user input: each end an instant (ISO or a phrase, read as by
    `parse_instant`); a missing start means "from the reference time"; `valid_to` before
    `valid_from` is InvalidParams."""
    ref = to_utc(reference) if reference is not None else clock.now()
    start = ref if valid_from is None else parse_instant(valid_from, reference=ref, tz=tz)
    end = None if valid_to is None else parse_instant(valid_to, reference=ref, tz=tz)
    if end is not None and end < start:
        raise InvalidParams(
            f"valid_to ({format_utc(end)}) is before valid_from ({format_utc(start)})",
            details={"valid_from": format_utc(start), "valid_to": format_utc(end)},
        )
    return Interval(start, end)


# -- parsing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedTime:
    """What a time expression names: an instant `at` and the `period` it covers at its
    `granularity`. Calendar phrases ("yesterday", "March 2023", "last week") give the period's
    start as `at`; shifts ("3 hours ago", "in 2 days") and clock times give the exact instant."""

    at: datetime
    period: Interval
    granularity: Granularity


def parse_instant(
    value: TimeInput,
    *,
    reference: datetime | None = None,
    tz: str | tzinfo | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> datetime:
    """The instant `value` names, in UTC (see the module's rules)."""
    if isinstance(value, date):
        return to_utc(value, resolve_zone(tz, reference))
    return parse_time(value, reference=reference, tz=tz, clock=clock).at


def parse_time(
    text: str,
    *,
    reference: datetime | None = None,
    tz: str | tzinfo | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> ParsedTime:
    """Read one time expression. A phrase that names a span ("since Monday", "last 3 days")
    is InvalidParams here: dateparser would drop the range word and answer a wrong instant."""
    ctx = _Context.make(reference, tz, clock)
    cleaned = _clean(text)
    if any(pattern.fullmatch(cleaned.lower()) for pattern, _ in _RANGE_FORMS):
        raise InvalidParams(
            f"{_quote(text)} names a span of time, not one instant; give a date or time such as "
            "'2024-03-05T14:30:00Z' or 'yesterday 14:30'",
            details={"value": _quote(text)},
        )
    try:
        return _parse_point(cleaned, ctx, original=text)
    except (ValueError, OverflowError) as exc:  # dates past year 9999 and the like
        raise _unreadable(text) from exc


def parse_range(
    text: str,
    *,
    reference: datetime | None = None,
    tz: str | tzinfo | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> Interval:
    """The span of time `text` names: "in March 2023" is [2023-03-01, 2023-04-01), "last week"
    the previous Monday-to-Monday, "since Monday" [Monday 00:00, reference), "last 3 days"
    [reference - 3 days, reference), "between X and Y" [X, end of Y), "until X" (None, end of X),
    "before X" (None, X), "after X" [end of X, None); a single expression gives its period."""
    ctx = _Context.make(reference, tz, clock)
    cleaned = _clean(text)
    lowered = cleaned.lower()
    try:
        for pattern, build in _RANGE_FORMS:
            match = pattern.fullmatch(lowered)
            if match is not None:
                return build(match, ctx, cleaned)
        return _parse_point(_strip_preposition(cleaned), ctx, original=text).period
    except (ValueError, OverflowError) as exc:  # dates past year 9999 and the like
        raise _unreadable(text) from exc


@dataclass(frozen=True)
class _Context:
    reference: datetime  # aware, UTC
    zone: tzinfo

    @classmethod
    def make(cls, reference: datetime | None, tz: str | tzinfo | None, clock: Clock) -> _Context:
        zone = resolve_zone(tz, reference)
        ref = clock.now() if reference is None else to_utc(reference, zone)
        return cls(ref, zone)

    @property
    def local_reference(self) -> datetime:
        """The reference on the zone's wall clock, naive (how calendar arithmetic is done)."""
        return self.reference.astimezone(self.zone).replace(tzinfo=None)

    def from_wall(self, wall: datetime) -> datetime:
        return to_utc(wall, self.zone)


def _clean(text: str) -> str:
    if not isinstance(text, str):
        raise InvalidParams(f"a time must be text, got {type(text).__name__}; {_ACCEPTED}")
    cleaned = " ".join(text.split())
    if not cleaned:
        raise InvalidParams(f"the time is empty; {_ACCEPTED}")
    if len(cleaned) > MAX_EXPRESSION_CHARS:
        raise InvalidParams(
            f"a time expression is at most {MAX_EXPRESSION_CHARS} characters, got {len(cleaned)}; {_ACCEPTED}"
        )
    return cleaned


def _unreadable(original: str) -> InvalidParams:
    return InvalidParams(
        f"could not read {_quote(original)} as a date or time; {_ACCEPTED}", details={"value": _quote(original)}
    )


def _quote(text: str) -> str:
    return repr(text[:80] + ("..." if len(text) > 80 else ""))


def _parse_point(text: str, ctx: _Context, *, original: str) -> ParsedTime:
    lowered = text.lower()
    iso = _parse_iso(text, ctx)
    if iso is not None:
        return iso
    shifted = _parse_shift(lowered, ctx)
    if shifted is not None:
        return shifted
    common = _parse_common(lowered, ctx)
    if common is not None:
        return common
    if _BARE_NUMBER.fullmatch(lowered):
        # dateparser reads "5" as May of some year and "12" as December; nobody means that.
        raise _unreadable(original)
    return _parse_phrase(text, ctx, original=original)


# ISO 8601 first: exact, fast, and never second-guessed by a phrase parser.
_ISO_YEAR = re.compile(r"\d{4}")
_ISO_MONTH = re.compile(r"(\d{4})-(\d{2})")
_ISO_SHAPED = re.compile(r"\d{4}-\d{2}(-\d{2}([T ][\d:.,]+(Z|[+-]\d{2}(:?\d{2})?)?)?)?", re.IGNORECASE)
_BARE_NUMBER = re.compile(r"[+-]?\d+(\.\d+)?")


def _parse_iso(text: str, ctx: _Context) -> ParsedTime | None:
    try:
        if _ISO_YEAR.fullmatch(text):
            return _calendar(datetime(int(text), 1, 1), "year", ctx)
        if match := _ISO_MONTH.fullmatch(text):
            return _calendar(datetime(int(match[1]), int(match[2]), 1), "month", ctx)
        if len(text) == 10 and text[4] == "-":
            return _calendar(datetime.combine(date.fromisoformat(text), datetime.min.time()), "day", ctx)
        if len(text) < 13 or not text[:4].isdigit():
            return None
        value = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError as exc:
        if _ISO_SHAPED.fullmatch(text):
            # dateparser would read "2024-13-01" as 13 January: an invalid ISO date is refused.
            raise _unreadable(text) from exc
        return None
    has_seconds = value.second or value.microsecond or re.search(r"\d:\d\d:\d\d", text)
    granularity: Granularity = "second" if has_seconds else "minute"
    at = to_utc(value, ctx.zone)
    return ParsedTime(at, _period_around(at, granularity, ctx), granularity)


# "3 hours ago", "in 2 weeks", "a month from now": handled here, not by dateparser, so that
# sub-day shifts are exact elapsed time and the rest keep the wall-clock time of day.
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3,
}  # fmt: skip
_COUNT = r"(\d{1,4}|a couple of|a few|an|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(second|minute|hour|day|week|month|year)s?"
_AGO = re.compile(rf"{_COUNT} {_UNIT} ago")
_AHEAD = re.compile(rf"(?:in {_COUNT} {_UNIT}|{_COUNT} {_UNIT} from now)")
_SHIFT_GRANULARITY: dict[str, Granularity] = {
    "second": "second", "minute": "minute", "hour": "hour", "day": "day", "week": "week", "month": "day", "year": "day"
}  # fmt: skip
_EXACT_UNITS = {"second": timedelta(seconds=1), "minute": timedelta(minutes=1), "hour": timedelta(hours=1)}


# The phrases read most often (questions such as "what happened last week", sentences such as
# "we shipped it yesterday"): each is the calendar day, week, month or year dateparser reads it
# as (the reference shifted by so many of a unit, then its period; tests compare the two), at
# a few microseconds instead of dateparser's few milliseconds.
_COMMON_PHRASES: dict[str, tuple[str, int, Granularity]] = {
    "today": ("day", 0, "day"), "yesterday": ("day", -1, "day"),
    "this week": ("day", 0, "week"), "last week": ("day", -7, "week"),
    "this month": ("month", 0, "month"), "last month": ("month", -1, "month"),
    "this year": ("month", 0, "year"), "last year": ("month", -12, "year"),
}  # fmt: skip


def _parse_common(lowered: str, ctx: _Context) -> ParsedTime | None:
    phrase = _COMMON_PHRASES.get(lowered)
    if phrase is None:
        return None
    unit, amount, granularity = phrase
    wall = ctx.local_reference
    wall = wall + timedelta(days=amount) if unit == "day" else _add_months(wall, amount)
    return _calendar(wall, granularity, ctx)


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word]


def _parse_shift(lowered: str, ctx: _Context) -> ParsedTime | None:
    if match := _AGO.fullmatch(lowered):
        sign, count, unit = -1, match[1], match[2]
    elif match := _AHEAD.fullmatch(lowered):
        sign = 1
        count, unit = (match[1], match[2]) if match[1] is not None else (match[3], match[4])
    else:
        return None
    at = _shift(ctx, sign * _count(count), unit)
    granularity = _SHIFT_GRANULARITY[unit]
    return ParsedTime(at, _period_around(at, granularity, ctx), granularity)


def _shift(ctx: _Context, amount: int, unit: str) -> datetime:
    if unit in _EXACT_UNITS:
        return ctx.reference + amount * _EXACT_UNITS[unit]
    wall = ctx.local_reference
    if unit == "day":
        wall += timedelta(days=amount)
    elif unit == "week":
        wall += timedelta(weeks=amount)
    else:
        wall = _add_months(wall, amount * (12 if unit == "year" else 1))
    return ctx.from_wall(wall)


def _add_months(wall: datetime, months: int) -> datetime:
    index = wall.year * 12 + wall.month - 1 + months
    year, month = divmod(index, 12)
    month += 1
    last_day = (date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)).day
    return wall.replace(year=year, month=month, day=min(wall.day, last_day))


_CLOCK_TIME = re.compile(r"\d:\d\d|\d\s*[ap]\.?m\b|\bnoon\b|\bmidnight\b", re.IGNORECASE)
_PERIOD_TO_GRANULARITY: dict[str, Granularity] = {"day": "day", "week": "week", "month": "month", "year": "year"}


# Kept: dateparser takes milliseconds a phrase, and remember reads a memory's phrases twice (a
# first guess, then with the graph's names).
@functools.lru_cache(maxsize=1024)
def _parse_phrase(text: str, ctx: _Context, *, original: str) -> ParsedTime:
    data = _dateparser(ctx.local_reference).get_date_data(text)
    value = data.date_obj
    if value is None:
        raise _unreadable(original)
    granularity = _PERIOD_TO_GRANULARITY.get(str(data.period))
    # dateparser reports "yesterday 09:00" as a day (it only sees a time when the minutes or
    # hours are not zero), so clock times in the text are recognised here.
    if granularity is None or _CLOCK_TIME.search(text):  # exact to the minute or second given
        seconds: Granularity = "second" if re.search(r"\d:\d\d:\d\d", text) else "minute"
        at = value.astimezone(UTC) if value.tzinfo is not None else ctx.from_wall(value)
        return ParsedTime(at, _period_around(at, seconds, ctx), seconds)
    wall = value.astimezone(ctx.zone).replace(tzinfo=None) if value.tzinfo is not None else value
    return _calendar(wall, granularity, ctx)


def _dateparser(relative_base: datetime) -> DateDataParser:
    # Imported on first use: dateparser takes ~0.1 s to import and most runs never parse a phrase.
    from dateparser.date import DateDataParser

    settings: dict[str, Any] = {
        "RELATIVE_BASE": relative_base,  # naive wall time: dateparser mishandles aware bases
        "PREFER_DATES_FROM": "past",  # memory looks back: "Tuesday" is the last one
        "PREFER_DAY_OF_MONTH": "first",  # else "March 2023" is 2023-03-<today's day>
        "RETURN_TIME_AS_PERIOD": True,  # tells "yesterday 14:30" (a time) from "yesterday"
        "DATE_ORDER": "MDY",
    }
    # English only: language detection is slow and misreads short phrases.
    return DateDataParser(languages=["en"], settings=settings)


def _calendar(wall: datetime, granularity: Granularity, ctx: _Context) -> ParsedTime:
    start, end = _granule(wall, granularity)
    period = Interval(ctx.from_wall(start), ctx.from_wall(end))
    assert period.start is not None
    return ParsedTime(period.start, period, granularity)


def _period_around(at: datetime, granularity: Granularity, ctx: _Context) -> Interval:
    if granularity in _EXACT_UNITS:
        step = _EXACT_UNITS[granularity]
        start = datetime.min.replace(tzinfo=UTC) + ((at - datetime.min.replace(tzinfo=UTC)) // step) * step
        return Interval(start, start + step)
    start, end = _granule(at.astimezone(ctx.zone).replace(tzinfo=None), granularity)
    return Interval(ctx.from_wall(start), ctx.from_wall(end))


def _granule(wall: datetime, granularity: Granularity) -> tuple[datetime, datetime]:
    """The local calendar day, ISO week, month or year holding `wall`, as naive wall times."""
    day = datetime(wall.year, wall.month, wall.day)
    if granularity == "week":
        monday = day - timedelta(days=day.weekday())
        return monday, monday + timedelta(weeks=1)
    if granularity == "month":
        first = day.replace(day=1)
        return first, _add_months(first, 1)
    if granularity == "year":
        return datetime(wall.year, 1, 1), datetime(wall.year + 1, 1, 1)
    return day, day + timedelta(days=1)


# -- range phrases -------------------------------------------------------------------------

_PREPOSITION = re.compile(r"(?:in|during|on|at|within) (?!\d+ (?:second|minute|hour|day|week|month|year))(.+)")


def _strip_preposition(text: str) -> str:
    """ "in March 2023" -> "March 2023"; "in 3 days" stays a shift."""
    match = _PREPOSITION.fullmatch(text.lower())
    if match is None or _AHEAD.fullmatch(text.lower()):
        return text
    return text[len(text) - len(match[1]) :]


def _tail(match: re.Match[str], original: str, group: int = 1) -> str:
    """A group of a match on the lower-cased text, taken from the original (case kept)."""
    return original[match.start(group) : match.end(group)]


def _point(match: re.Match[str], ctx: _Context, original: str, group: int = 1) -> ParsedTime:
    text = _strip_preposition(_tail(match, original, group))
    return _parse_point(text, ctx, original=text)


def _since(match: re.Match[str], ctx: _Context, original: str) -> Interval:
    start = _point(match, ctx, original).period.start
    assert start is not None
    if start > ctx.reference:
        raise InvalidParams(f"{_quote(original)} starts after the reference time {format_utc(ctx.reference)}")
    return Interval(start, ctx.reference)


def _until(match: re.Match[str], ctx: _Context, original: str) -> Interval:
    return Interval(None, _point(match, ctx, original).period.end)


def _before(match: re.Match[str], ctx: _Context, original: str) -> Interval:
    return Interval(None, _point(match, ctx, original).period.start)


def _after(match: re.Match[str], ctx: _Context, original: str) -> Interval:
    return Interval(_point(match, ctx, original).period.end, None)


def _between(match: re.Match[str], ctx: _Context, original: str) -> Interval:
    first = _point(match, ctx, original, 1).period
    last = _point(match, ctx, original, 2).period
    if last.end is not None and first.start is not None and last.end < first.start:
        raise InvalidParams(f"{_quote(original)} ends before it starts")
    return Interval(first.start, last.end)


def _rolling(match: re.Match[str], ctx: _Context, original: str) -> Interval:
    count = _count(match[1]) if match[1] else 1
    return Interval(_shift(ctx, -count, match[2]), ctx.reference)


# Tried in order: "from X to Y" before "from X", which would swallow " to Y". "last week" is
# the calendar week (left to the phrase parser); "last 7 days", "past week", "last hour" roll.
_RANGE_FORMS = [
    (re.compile(r"(?:between|from) (.+?) (?:and|to|until|till) (.+)"), _between),
    (re.compile(r"(?:since|from) (.+)"), _since),
    (re.compile(r"(?:until|till|up to|through) (.+)"), _until),
    (re.compile(r"before (.+)"), _before),
    (re.compile(r"after (.+)"), _after),
    (re.compile(rf"(?:the )?(?:last|past|previous) {_COUNT} {_UNIT}"), _rolling),
    (re.compile(rf"(?:the )?past (){_UNIT}"), _rolling),
    (re.compile(r"(?:the )?(?:last|past|previous) ()(second|minute|hour)"), _rolling),
]
