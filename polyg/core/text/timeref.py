"""Time references in a query and the timeframe they name, read with polyg.core.text.time against
the reference time. A reference that names no date ("before the migration", "lately") is kept
as a relative timeframe holding its words."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, Field

from polyg.core.text.time import Interval, format_utc, parse_range
from polyg.errors import PolygError


# The timeframe a query names (recall's ClassifierOutput.timeframe).
class Timeframe(BaseModel):
    type: Literal["specific", "range", "relative"]
    # An ISO instant for specific and range (their start); the expression itself for a
    # relative time that names no date ("before the migration", "lately").
    value: str = Field(min_length=1, max_length=200)
    end: str | None = None


_DAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?"
_MONTH = (
    r"(?:january|february|april|june|july|august|september|october|november|december|"
    r"jan|feb|apr|jun|jul|aug|sept?|oct|nov|dec)"
)
_AMBIGUOUS_MONTH = r"(?:may|march)"  # also verbs: a time only with a date or a time word
_ORD = r"\d{1,2}(?:st|nd|rd|th)?"
_NUM = (
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"a few|few|a couple of|couple of|several)"
)
_UNIT = r"(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?|decades?|quarters?|sprints?)"
_PERIOD = (
    r"(?:week|month|year|quarter|sprint|weekend|night|morning|afternoon|evening|spring|summer|"
    r"autumn|fall|winter|season|decade|century|semester|term)"
)
_SHIFT = r"(?:this|last|next|past|previous|coming|current|same|that|the other|early|late)"
_EVENT_OPENER = (
    r"(?:before|after|during|since|until|till|prior to|following|ahead of|right after|just before|shortly after)"
)

# Each pattern finds one time reference (case-insensitive, on text with the names masked).
_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(?:between|from) .{1,40}? (?:and|to|until) .{1,30}?(?=[?.!,;]|$)",
        r"\b\d{4}-\d{2}(?:-\d{2}(?:[T ][\d:.]+Z?)?)?\b",
        r"\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b",
        rf"\b(?:(?:early|late|mid)[- ])?(?:{_SHIFT} )?(?:{_MONTH}|{_AMBIGUOUS_MONTH}(?= {_ORD}\b| \d{{4}}))"
        rf"(?: {_ORD}\b)?(?:,? \d{{4}})?\b",
        rf"\b(?:in|of|since|until|before|after|during|last|next|this|early|late|mid)[- ]{_AMBIGUOUS_MONTH}\b"
        rf"(?:,? \d{{4}})?",
        rf"\b{_ORD} (?:of )?(?:{_MONTH}|{_AMBIGUOUS_MONTH})\b(?:,? \d{{4}})?",
        r"\bthe \d{1,2}(?:st|nd|rd|th)\b",
        rf"\b(?:since |until |before |after |on |last |next |this |past )?{_DAY}(?:['’]s)?\b",
        r"\b(?:the )?day (?:after tomorrow|before yesterday)\b",
        r"\b(?:yesterday|today|tonight|tomorrow)(?:['’]s)?\b",
        r"\b(?:in |during |for )?q[1-4](?: \d{4})?\b",
        r"\b(?:over|during|on|at|for) the (?:weekend|holidays|summer|winter|spring|autumn|fall|break)\b",
        rf"\b(?:in |for |over |within |during )?(?:the )?(?:last|past|next|previous|coming) {_NUM}? ?{_UNIT}\b",
        rf"\b{_SHIFT} {_PERIOD}\b",
        rf"\b{_NUM} {_UNIT} (?:ago|earlier|later|from now|back)\b",
        r"\b(?:back )?(?:in |since |during |before |after |of |by )?(?:the )?(?:early |late |mid[- ])?"
        r"(?:18|19|20)\d{2}s?\b",
        r"\b(?:the )?(?:'|’)\d0s\b",
        r"\b(?:new year(?:['’]s)?(?: eve| day)?|christmas(?: eve| day)?|thanksgiving|easter|halloween|"
        r"(?:the )?holidays?(?: break| season)?|(?:spring|summer|winter) break|black friday)\b",
        r"\b(?:lately|recently|nowadays|these days|so far|right now|at the moment|at present|currently|"
        r"current|now|earlier today|this morning|back then|since then|at the time)\b",
        r"\b(?:at )?\d{1,2}(?::\d{2})? ?(?:am|pm)\b|\b\d{1,2}:\d{2}\b|\bat (?:noon|midnight)\b",
        r"\bin (?:the )?(?:spring|summer|autumn|fall|winter)\b",
        rf"\b{_EVENT_OPENER} (?:the|our|my|their|his|her|its|this|that|last|X['’]s) (?:[\w-]+ ){{0,2}}[\w-]+\b",
        rf"\b{_EVENT_OPENER} (?:he|she|they|we|i|it) (?:\w+ ){{0,1}}\w+\b",
        rf"\b{_EVENT_OPENER} \w+ing (?:the|his|her|my|our|their|a|an) [\w-]+\b",
        r"\bwhile (?:i|we|he|she|they|you) (?:was|were) (?:on|at|in|away)\b(?: \w+)?",
        r"\bon (?:vacation|holiday|leave|sabbatical)\b",
    )
)
# Asking for a time or an order without stating one ("When did...", "in what order").
_ASKS_TIME = re.compile(
    r"^(?:so |and |ok,? )?(?:when|since when|how long|how recently|how often)\b|"
    r"\bwhen (?:did|was|were|is|are|will|do|does|has|have|had|should|can|could)\b|"
    r"\b(?:what time|what date|which date did|how long|how long ago|how recently)\b|"
    r"\b(?:in )?(?:what|the|which|chronological) order\b|\bin order\b(?! to)|\bchronolog|\btimeline\b|"
    r"\bsequence of events\b|\bwhat happened\b|\b(?:first|last) time\b|\bremind me when\b|"
    r"\bwhen (?:i|we|he|she|they) (?:last|first)\b|\banything happen(?:ed)?\b|^order\b|"
    r"\bas (?:it|they) happened\b|\bin sequence\b",
    re.IGNORECASE,
)
_RANGE_WORDS = re.compile(
    r"\b(?:since|between|from|until|till|before|after|last|past|previous|next|over|during|in)\b", re.IGNORECASE
)
_DAY_OR_FINER = timedelta(days=1)


@dataclass(frozen=True)
class TimeRef:
    text: str
    start: int
    end: int


def find_time_refs(text: str) -> list[TimeRef]:
    """Time references left to right; overlapping finds keep the longest."""
    found = [_trimmed(m.group(0), m.start()) for p in _PATTERNS for m in p.finditer(text)]
    # "between v2 and v3" is no time: a span needs a time word at one end at least.
    found = [r for r in found if not _SPAN_OPENER.match(r.text) or _TIMEISH.search(r.text)]
    found.sort(key=lambda r: (-(r.end - r.start), r.start))
    kept: list[TimeRef] = []
    for ref in found:
        if ref.text and all(ref.end <= k.start or ref.start >= k.end for k in kept):
            kept.append(ref)
    return sorted(kept, key=lambda r: r.start)


_SPAN_OPENER = re.compile(r"(?:between|from) ", re.IGNORECASE)
_TIMEISH = re.compile(
    rf"\b(?:{_DAY}|{_MONTH}|may|march|\d{{4}}|\d{{1,2}}(?:st|nd|rd|th)|\d{{1,2}}(?::\d{{2}})? ?(?:am|pm)|"
    r"\d{1,2}:\d{2}|yesterday|today|tomorrow|now|noon|midnight|morning|evening|night|week|month|year|"
    r"spring|summer|autumn|fall|winter|christmas|easter)\b",
    re.IGNORECASE,
)
_TRAILING_FUNCTION_WORDS = frozenset(
    "what which who why how when where did does do was were is are and or but the a an to of for "
    "we i you they he she it our my your their with on in at by from that this".split()
)


def _trimmed(text: str, start: int) -> TimeRef:
    """An event-relative reference without the words of the next clause ("before the
    migration what did...")."""
    words = text.strip().split(" ")
    while len(words) > 2 and words[-1].lower() in _TRAILING_FUNCTION_WORDS:
        words.pop()
    kept = " ".join(words)
    return TimeRef(kept, start, start + len(kept))


def asks_for_time(text: str) -> bool:
    return _ASKS_TIME.search(text) is not None


def timeframe(refs: list[TimeRef], reference: datetime) -> Timeframe | None:
    """The timeframe of the first reference that names a date; else a relative one."""
    if not refs:
        return None
    for ref in refs:
        span = _interval(ref.text, reference)
        if span is not None:
            return _shape(ref.text, span)
    return Timeframe(type="relative", value=refs[0].text[:200])


def _interval(text: str, reference: datetime) -> Interval | None:
    if re.search(r"['’]s$", text):
        # "after Tuesday's deploy": the deploy is the anchor, and it happened on Tuesday.
        text = re.sub(r"^(?:right |just |shortly )?(?:after|before|since|until|on) ", "", text, flags=re.IGNORECASE)
    cleaned = re.sub(r"['’]s\b", "", text).replace("back in ", "in ")
    try:
        return parse_range(cleaned, reference=reference)
    except (PolygError, ValueError, OverflowError):
        return None


def _shape(text: str, span: Interval) -> Timeframe:
    start = format_utc(span.start) if span.start is not None else None
    end = format_utc(span.end) if span.end is not None else None
    if start is None:
        return Timeframe(type="range", value=end or text, end=end)
    length = span.duration
    one_day = length is not None and length <= _DAY_OR_FINER
    if one_day and not _RANGE_WORDS.search(text):
        return Timeframe(type="specific", value=start, end=end)
    return Timeframe(type="range", value=start, end=end)
