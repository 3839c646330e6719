"""The answering span: the sentence of the best memories that answers a question.

A memory is what was said, often several sentences ("Hey Mel! Last Friday I went to a council
meeting for adoption. It was inspiring."). An answer says the one sentence that answers the
question, not the whole memory, and not the name of the person who said it: the sentence
holding most of the question's words, among the first memories recall ranks (their rank counts
too: the search read the whole memory, the sentence is a part of it), by the person the
question names when it names one. A question is not an answer: a sentence asking one counts
for less. A when-question wants a sentence that states a time, and the time it states is
read from when the memory was told (polyg.core.text.told_time).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from polyg.core.recall.answering import word_key, words
from polyg.core.recall.evidence import Evidence
from polyg.core.text import sentences
from polyg.core.text.time import Interval, parse_instant
from polyg.core.text.timeref import find_time_refs
from polyg.core.text.told_time import ToldTime, told_times
from polyg.errors import PolygError

# The first memories an answer is looked for in: the search ranks the memory holding the
# answer among its first few (LoCoMo dev: the first 3 hold it for 4 questions in 10).
MAX_MEMORIES = 5
# How much each part of a sentence's score weighs (LoCoMo dev, judge-free answer metric).
MEMORY_WORDS = 0.5  # the question's words anywhere in the memory (its context)
RANK = 0.6  # the memory's own score from the search (0..0.95)
BY_NAMED = 0.25  # told by a person the question names, or naming them
TIME_STATED = 0.4  # a when-question's sentence that states a time
ASKING = 0.35  # a sentence that asks a question answers less
ANSWER_KIND = 0.3  # holds words of the kind of answer asked for (a frequency, a place, ...)
NEW_WORDS = 0.2  # says something the question does not (up to four words)
OTHER_TIME = 0.5  # tells of another time than the one the question asks about
# A sentence with fewer words than this besides the question's is said with the next one.
FOLLOWED_BELOW = 5
# A span scoring below this shares too little with the question to be its answer.
MIN_SCORE = 0.3

# What kind of answer a question asks for, and the words that say one: a sentence holding them
# is likelier to answer ("How often ...?" -> "a few times a week").
_ANSWER_KINDS: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (re.compile(asks, re.I), re.compile(says, re.I))
    for asks, says in (
        (r"^\s*how often\b", r"\b(?:times?|every|daily|weekly|monthly|once|twice|always|usually|often)\b"),
        (
            r"^\s*how (?:long|many years|many months)\b",
            r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|"
            r"ten|a few|several|couple)\b.{0,12}\b(?:years?|months?|weeks?|days?|hours?)\b|\bsince\b",
        ),
        (
            r"^\s*how (?:many|much)\b",
            r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|a few|several|dozen)\b",
        ),
        (r"^\s*why\b", r"\b(?:because|since|so that|to help|wanted to|in order to|reason|due to|as it|made me)\b"),
        (r"^\s*how did .* feel\b|\bfeel about\b", r"\b(?:felt|feel|feeling|was so|made me)\b"),
        (
            r"^\s*where\b",
            r"\b(?:in|at|to|near|from) (?:the )?[A-Z][a-z]+|\b(?:park|beach|home|city|town|country|"
            r"studio|shelter|school|store|center|centre|lake|mountains?|forest|museum)\b",
        ),
        (
            r"^\s*who\b",
            r"(?<=[a-z,] )[A-Z][a-z]+\b|\b(?:my|our|his|her) (?:mom|mother|dad|father|friend|sister|"
            r"brother|wife|husband|son|daughter|kids?|family|partner|boss|mentor|colleague)s?\b",
        ),
        (r"\bfavou?rite\b", r"\b(?:favou?rite|love|fave|best|top)\b"),
    )
)
_SPEAKER = re.compile(r"^(?P<who>[A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}): (?P<said>.+)$", re.S)
_IMAGE = re.compile(r"\s*\[image: [^\]]*\]")
_NAME_WORD = re.compile(r"[A-Za-z][\w'-]*")


@dataclass(frozen=True)
class Span:
    memory: Evidence
    speaker: str | None
    sentence: str  # as told, first person kept
    score: float
    time: ToldTime | None = None  # the time the sentence (or its memory) states


def told_by(text: str) -> tuple[str | None, str]:
    """A memory's speaker and what they said ("Tom: My brother Ravi ..." -> Tom, "My brother
    Ravi ..."); no speaker when it was told without one."""
    spoken = _SPEAKER.match(text.strip())
    if spoken is None:
        return None, text.strip()
    return spoken.group("who"), spoken.group("said")


def told_at(memory: Evidence) -> datetime | None:
    if not memory.at:
        return None
    try:
        return parse_instant(memory.at)
    except (PolygError, ValueError, OverflowError):
        return None


def answering_spans(
    query: str,
    memories: Sequence[Evidence],
    names: Sequence[str],
    *,
    wants_time: bool = False,
    window: Interval | None = None,
) -> list[Span]:
    """The sentences of the first memories that answer `query`, best first (those scoring at
    least MIN_SCORE); `names`: the people and things the question names; `wants_time`: a
    when-question, which wants a sentence stating a time; `window`: the time the question asks
    about (a sentence about another time answers less)."""
    named = {w.lower() for n in names for w in _NAME_WORD.findall(n)}
    topic = words(_without_times(query))
    # A question about a named thing alone ("What is 'Little Women' about?") asks for its name.
    asked = {w for w in topic if w not in {word_key(n) for n in named}} or topic
    if not asked:
        return []
    # The kinds of answer the question asks for, and whether times matter: reading a memory's
    # times costs more than the rest of its scoring, so only a question about time reads them.
    kinds = [says for asks, says in _ANSWER_KINDS if asks.search(query)]
    timed = wants_time or window is not None
    out: list[Span] = []
    for memory in memories[:MAX_MEMORIES]:
        speaker, said = told_by(memory.text)
        at = told_at(memory) if timed else None
        times = told_times(said, at) if at is not None else []
        in_memory = _share(asked, said)
        by_named = bool(named) and (
            (speaker is not None and speaker.lower() in named) or any(n in said.lower() for n in named)
        )
        parts = _parts(said)
        for i, sentence in enumerate(parts):
            share = _share(asked, sentence)
            if share == 0:
                continue
            time = next((t for t in times if t.words in sentence), None)
            if i + 1 < len(parts) and len(words(sentence) - asked) < FOLLOWED_BELOW:
                # The sentence says little more than the question: its answer follows it
                # ("It was the first movie of the series. Watching it with my family was amazing.")
                sentence = f"{sentence.strip()} {parts[i + 1].strip()}"
            score = share + MEMORY_WORDS * in_memory + RANK * memory.score + BY_NAMED * by_named
            if wants_time and time is not None:
                score += TIME_STATED
            if any(says.search(sentence) for says in kinds):
                score += ANSWER_KIND
            score += NEW_WORDS * min(len(words(sentence) - asked), 4) / 4
            if window is not None and not _within(window, time, at, sentence):
                score -= OTHER_TIME
            if sentence.rstrip().endswith("?"):
                score -= ASKING
            if score >= MIN_SCORE:
                # A sentence stating no time tells of the time its memory states, if any.
                out.append(Span(memory, speaker, sentence.strip(), round(score, 4), time or next(iter(times), None)))
    return sorted(out, key=lambda s: -s.score)


# Words that frame a question, not its topic ("how long has she been painting": painting).
_FRAME = re.compile(
    r"\b(?:how (?:long|often|many|much|far|old)|(?:what|which) (?:kind|type|sort|year|month|day|date|week)s?(?: of)?|"
    r"in what way|what (?:is|are|was|were) the names?(?: of)?)\b",
    re.I,
)


# Words without which no time is named (a cheap test before reading the time references).
_MAY_NAME_TIME = re.compile(
    r"\d|\b(?:yesterday|today|tonight|tomorrow|ago|last|next|this|past|previous|since|until|before|after|"
    r"during|recently|lately|now|week|weekend|month|year|morning|afternoon|evening|night|spring|summer|"
    r"autumn|fall|winter|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|jan|feb|mar|apr|may|jun|jul|aug|"
    r"sept?|oct|nov|dec)",
    re.I,
)


def _without_times(query: str) -> str:
    """The question without its time words ("in 2023", "last Friday": they say when, not what)
    and the words that frame it ("how long", "what kind of")."""
    if _MAY_NAME_TIME.search(query):
        for ref in reversed(find_time_refs(query)):
            query = query[: ref.start] + " " + query[ref.end :]
    return _FRAME.sub(" ", query)


_LENGTH = {"day": timedelta(days=1), "week": timedelta(days=14), "month": timedelta(days=31)}


# Words before a time that make it the end of what the sentence tells ("until April 2026").
_UNTIL = re.compile(r"\b(?:until|till|up to|up until|through|before)\s*$", re.I)


def _within(window: Interval, time: ToldTime | None, at: datetime | None, sentence: str = "") -> bool:
    """Whether what a sentence tells may fall in the asked-about window: the time it states
    overlaps it ("until April 2026" states an end: anything before it), or, stating none, it was
    told before the window ended (what was said before may still hold)."""
    end = window.end.date() if window.end is not None else None
    start = window.start.date() if window.start is not None else None
    if time is not None:
        last = time.start + _LENGTH.get(time.precision, timedelta(days=366))
        if _UNTIL.search(sentence[: max(sentence.find(time.words), 0)]):
            return start is None or last > start
        return (end is None or time.start < end) and (start is None or last > start)
    told = at.date() if at is not None else None
    return told is None or end is None or told < end


def tells_of(memory: Evidence, window: Interval) -> bool:
    """Whether any sentence of a memory may tell of the window, read as `answering_spans` reads
    a sentence: the time it states, else the time it was told."""
    _, said = told_by(memory.text)
    at = told_at(memory)
    times = told_times(said, at) if at is not None else []
    for sentence in _parts(said):
        time = next((t for t in times if t.words in sentence), None)
        if _within(window, time, at, sentence):
            return True
    return False


def _parts(said: str) -> list[str]:
    """A memory's sentences, without the captions of photos it shared: a caption describes the
    photo in the question's own words more often than it answers (it still counts for the
    memory's share of the question's words)."""
    text = _IMAGE.sub("", said)
    return sentences.split(text, any_start=True) or [text]


def _share(asked: set[str], text: str) -> float:
    return len(asked & words(text)) / len(asked)


def _first_time(text: str, at: datetime | None) -> ToldTime | None:
    if at is None:
        return None
    found = told_times(text, at)
    return found[0] if found else None
