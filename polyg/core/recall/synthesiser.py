"""The recall synthesiser (spec 003): an answer from the evidence the graphs returned.

Rules compose it by default, extractively: a causal chain as "A because B, which followed C",
events in order with their dates, an entity's facts that hold (now, or in the asked-about
time), then the closest stored memories. Confidence comes from the evidence: how strongly the
graphs matched, how many of the asked-for graphs answered, and how much of it mentions what the
query names. No evidence gives an honest "nothing stored", never an invented answer.

With an LLM, the spec's prompt is asked over the same evidence and must cite the ids it used,
all of them among the evidence; otherwise (or on any failure) the rules answer.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from polyg.core.recall.answering import (
    EXPLAINS,
    about,
    anchor_text,
    asks,
    because,
    cause_part,
    causes_of,
    effect_part,
    explains,
    fact_sentence,
    introduces,
    memory_chain,
    mid_sentence,
    names_in,
    on_topic,
    overlap,
    predicate_match,
    word_key,
    words,
)
from polyg.core.recall.evidence import Evidence, GraphName, best_first
from polyg.core.recall.executor import Execution
from polyg.core.recall.model import ClassifierOutput
from polyg.core.recall.output import (
    CausalStep,
    EntityInvolved,
    Reasoning,
    SemanticMatch,
    SynthesizerOutput,
    TemporalContext,
    TimedEvent,
)
from polyg.core.recall.spans import Span, answering_spans, tells_of, told_at, told_by
from polyg.core.recall.third_person import in_third_person, reads_alone
from polyg.core.text.time import Interval, parse_instant
from polyg.core.text.told_time import day_text, told_times
from polyg.errors import PolygError
from polyg.llm import LLM, Answer, LLMInvalidOutput, Message, with_fallback

NOTHING_STORED = "Nothing is stored about that."
NOTHING_EXPLAINS = "Nothing stored explains that."
MAX_EVENTS_IN_ANSWER = 5
MAX_MEMORIES_IN_ANSWER = 3
MAX_CHAIN = 5
# A second memory's sentence is said too when it scores at least this share of the best's.
SECOND_SPAN_SHARE = 0.9
SYNTHESIZER_MAX_TOKENS = 1000

SYNTHESIZER_PROMPT = """You are a response synthesizer for a multi-graph memory system.

Given raw results from multiple knowledge graphs, synthesize a coherent answer.

Guidelines:
1. Prioritize causal explanations when available
2. Include temporal context (when things happened)
3. Reference specific entities by name
4. Express confidence based on evidence strength
5. Suggest follow-up questions if relevant
6. Use only the results below; list in cited_ids the id of every result your answer uses

Original Query: {query}

Graph Results:
{results}

Respond with a JSON object containing:
- answer: string (natural language response)
- confidence: number (0-1)
- cited_ids: string[] (ids of the results the answer uses)
- follow_ups: string[] (optional follow-up questions)"""

_STOP = frozenset(
    "what when where which who whom why how does did do is are was were the a an and or of to in on for "
    "with about from that this have has had we i you our my your they their there any anything know "
    "tell give show please after before since".split()
)


def rule_synthesise(query: str, plan: ClassifierOutput, execution: Execution, reference: datetime) -> SynthesizerOutput:
    evidence = [e for e in best_first(execution.evidence()) if usable(e)]
    note = missing_note(execution)
    if not evidence:
        return SynthesizerOutput(answer=" ".join(filter(None, [NOTHING_STORED, note])), confidence=0.0)
    chain = _chain([e for e in evidence if e.kind == "cause"])
    events = sorted((e for e in evidence if e.kind == "event" and e.at), key=lambda e: e.at or "")
    undated = [e for e in evidence if e.kind == "event" and not e.at]
    facts = [e for e in evidence if e.kind == "fact" and _holds(e, plan, reference)]
    entities = [e for e in evidence if e.kind == "entity"]
    memories = [e for e in evidence if e.kind in ("memory", "concept")] + undated
    focused = _focused(query, plan, chain, events, facts, memories)
    told = [m for m in memories if m.kind == "memory"]
    steps = [*(_step(e) for e in chain), *(_memory_step(m) for m in focused.told_chain)]
    if focused.sentences:
        sentences = list(focused.sentences)
        used = [*focused.used, *(e for e in entities if chain)]
    else:
        ordered_facts = _by_predicate(query, facts)
        sentences = [
            *_chain_sentences(chain, plan),
            *_timeline_sentences(events),
            *_fact_sentences(ordered_facts),
        ]
        best_match = max((predicate_match(query, f) for f in facts), default=0.0)
        if memories and (not sentences or "semantic" in plan.intents or (best_match < 1.0 and told)):
            spans = answering_spans(query, told, [m.mention for m in plan.entities], window=_asked_window(query, plan))
            replaced = bool(facts) and asks_now(query, plan) and any(_contradicts(s.sentence, facts) for s in spans)
            if replaced:
                spans = [span for span in spans if not _contradicts(span.sentence, facts)]
            if spans:  # the sentences that answer, not every memory found
                said = _answering(spans)
                if facts and best_match == 0.0 and not chain and not events:
                    # Facts the question does not ask about ("is a member of" for "what does
                    # Yuki play") are not an answer when what was said is.
                    sentences, facts = [], []
                if asks_now(query, plan):
                    said = newest_first(said)
                    spoken = [_span_sentence(said[0]), *(_earlier_sentence(span) for span in said[1:])]
                else:
                    spoken = [_span_sentence(span) for span in said]
                # A sentence whose every word the facts said already is not said again.
                facts_said = words(" ".join(sentences))
                kept = [not _said_already(span.sentence, facts_said) for span in said]
                sentences += [text for text, keep in zip(spoken, kept, strict=True) if keep]
                first = [span.memory for span in said]
                memories = [*first, *(m for m in memories if m not in first)]
            elif not (replaced and sentences):  # what the current facts replaced is not quoted
                quoted = _still_to_quote(memories, sentences, _asked_window(query, plan) if events else None)
                if quoted or not sentences:
                    sentences.append(_memory_sentence(quoted or memories))
        if not sentences:  # an entity's name is an answer only when nothing else is stored
            sentences += _entity_sentences(entities, facts)
        used = [*chain, *events, *facts, *entities, *memories]
    if note:
        sentences.append(note)
    return SynthesizerOutput(
        answer=" ".join(sentences),
        confidence=confidence(query, plan, execution, evidence) if focused.answers else 0.1,
        reasoning=Reasoning(
            causal_chain=steps,
            temporal_context=_temporal_context(plan, events),
            entities_involved=_entities_involved(plan, entities, facts),
            semantic_matches=[SemanticMatch(id=e.id, text=e.text, score=round(e.score, 4)) for e in memories],
        ),
        sources=_sources(used),
        follow_ups=follow_ups(chain, events, entities, memories),
    )


@dataclass
class Focused:
    """The sentences that answer what the question asks (empty: the general answer is given),
    the evidence they use, and whether anything stored answers it at all."""

    sentences: list[str] = field(default_factory=list)
    used: list[Evidence] = field(default_factory=list)
    told_chain: list[Evidence] = field(default_factory=list)
    answers: bool = True


def _focused(
    query: str,
    plan: ClassifierOutput,
    chain: list[Evidence],
    events: list[Evidence],
    facts: list[Evidence],
    memories: list[Evidence],
) -> Focused:
    kind = asks(query)
    names = [m.mention for m in plan.entities]
    told = [m for m in memories if m.kind == "memory"]
    if kind == "why" and plan.causal_direction != "downstream":
        if chain and explains(query, f"{chain[0].effect} {chain[0].cause}") < EXPLAINS:
            chain = []  # the walk found links by meaning that share no word with the question
        if chain:  # the chain, then when its events happened; the entities it resolved are its sources
            root = _split(chain)[0][-1].cause or ""
            further = causes_of(root, told, MAX_CHAIN)  # causes told in memories the links do not hold
            said = _chain_sentences(chain, plan)
            if further:
                said[0] = said[0].rstrip(".") + "".join(f", {because(_clause(m))}" for m in further) + "."
            said += _timeline_sentences(events)
            return Focused(said, [*chain, *further, *events, *(f for f in facts if about(f, names))], further)
        path = memory_chain(query, told)
        if path:
            return Focused([_said(m.text) for m in path], path, path)
        if told and not on_topic(query, told):
            return Focused([NOTHING_EXPLAINS], [], answers=False)
        return Focused()
    if kind == "who":
        # Facts with the asked-about thing as their object, those whose predicate the question
        # names first ("who manages X": manager_of, not member_of).
        inverse = [f for f in facts if about(f, names) and not about_subject(f, names)]
        best_match = max((predicate_match(query, f, names) for f in inverse), default=0.0)
        if best_match > 0:
            named = [f for f in inverse if predicate_match(query, f, names) == best_match][:3]
            return Focused([fact_sentence(f, None) for f in named], named)
        # The question's words weigh more than the search score: "who manages X" wants the
        # memory that says who manages X, not another one about X.
        scored = [(2 * overlap(query, m.text) + m.score, m) for m in told if names_in(m.text, query)]
        if scored:
            window = _asked_window(query, plan)
            if window is not None:  # "who ... in March 2026": the sentence of that time
                spans = answering_spans(query, [m for _, m in scored], names, window=window)
                if spans:
                    return Focused([_span_sentence(spans[0])], [spans[0].memory])
            best = max(scored, key=lambda pair: pair[0])[1]
            if asks_now(query, plan):
                # A later memory that says as much tells how it is now ("X replaced Y as ...").
                as_much = [m for _, m in scored if overlap(query, m.text) >= overlap(query, best.text)]
                best = max(as_much, key=lambda m: told_at(m) or datetime.min.replace(tzinfo=UTC))
            return Focused([_said(best.text)], [best])
        if inverse:
            return Focused([fact_sentence(f, None) for f in inverse[:3]], inverse[:3])
        return Focused()
    if kind == "describe":
        # "Who is Ravi?": the memory that says who Ravi is ("My brother Ravi ..."), then the facts.
        telling = [m for m in told if any(introduces(m.text, n) for n in names)][:2]
        if not telling:
            return Focused()
        held = [f for f in facts if about_subject(f, names)]
        return Focused([*(_said(m.text) for m in telling), *_fact_sentences(held)], [*telling, *held])
    if kind == "when":
        # The sentence of a memory that tells it with a time, at the time its words name (read
        # from when it was told); else a logged event; else the day the best sentence was told.
        spans = answering_spans(query, told, names, wants_time=True, window=_asked_window(query, plan))
        best_event = _best_match(query, events)
        if spans and spans[0].time is not None and not _timed_from(best_event, spans[0].memory):
            return Focused([_when_sentence(spans[0])], [spans[0].memory])
        if best_event is not None:
            return Focused([_dated(best_event)], [best_event])
        if spans:
            return Focused([_when_sentence(spans[0])], [spans[0].memory])
        return Focused()
    if kind in ("after", "before"):
        # X is an event, or a memory that tells it (dated when it was said) when its event
        # was not logged; an event wins a tie.
        anchor = _best_match(anchor_text(query), [*events, *(m for m in told if m.at)])
        if anchor is None:
            return Focused()
        at = anchor.at or ""
        then = [e for e in events if (e.at or "") > at] if kind == "after" else [e for e in events if (e.at or "") < at]
        if kind == "before":
            then = then[-MAX_EVENTS_IN_ANSWER:]
        if not then:
            return Focused()  # nothing dated on that side: the general answer says what is stored
        return Focused(_timeline_sentences(then), [anchor, *then])
    return Focused()


def _best_match(text: str, events: list[Evidence]) -> Evidence | None:
    """The event that shares most of the text's words (at least half of them)."""
    scored = [(overlap(text, e.text), e.kind == "event", e) for e in events]
    scored = [item for item in scored if item[0] >= 0.5]
    return max(scored, key=lambda item: (item[0], item[1]))[2] if scored else None


def about_subject(fact: Evidence, names: list[str]) -> bool:
    subject = (fact.subject or "").lower()
    return any(n.lower() == subject for n in names)


def _by_predicate(query: str, facts: list[Evidence]) -> list[Evidence]:
    """The facts whose predicate the question names first (stable otherwise); only those when
    it names one outright ("where does X live" is not answered with whom X reports to)."""
    matched = [(predicate_match(query, f), f) for f in facts]
    if max((match for match, _ in matched), default=0.0) >= 1.0:
        return [f for match, f in matched if match >= 1.0]
    return [f for _, f in sorted(matched, key=lambda pair: -pair[0])]


def _step(link: Evidence) -> CausalStep:
    return CausalStep(cause=link.cause or "", effect=link.effect or "", confidence=link.score, evidence_id=link.id)


def _memory_step(memory: Evidence) -> CausalStep:
    """A cause stated in a memory's own sentence, as a step of the chain."""
    return CausalStep(
        cause=cause_part(memory.text).strip(" ."),
        effect=effect_part(memory.text).strip(" ."),
        confidence=round(min(max(memory.score, 0.0), 1.0), 4),
        evidence_id=memory.id,
    )


_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_TIME_WORDS = re.compile(
    r"\s*\b(?:yesterday|today|tonight|this (?:morning|afternoon|evening)|last night)\b"
    rf"|\s*\bon (?:\d{{1,2}}(?:st|nd|rd|th)? {_MONTH}|{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?)(?:,? \d{{4}})?\b"
    r"|\s*\bon \d{4}-\d{2}-\d{2}\b"
    r"|\s*\bon (?:mon|tues|wednes|thurs|fri|satur|sun)day\b"
    r"|\s*\bat \d{1,2}:\d{2}(?:\s*(?:am|pm|utc))?\b",
    re.I,
)


def _dated(event: Evidence) -> str:
    """An event's sentence with its date said once ("X on 2025-11-19 at 14:30 UTC.")."""
    text = _TIME_WORDS.sub("", event.text).strip(" ,.")
    text = re.sub(r"\s+,", ",", re.sub(r"\s{2,}", " ", text))
    at = _instant(event.at)
    if at is None:
        return f"{_cap(text)} ({_when(event.at)})."
    when = at.strftime("%Y-%m-%d")
    if (at.hour, at.minute) != (0, 0):
        when += at.strftime(" at %H:%M UTC")
    return f"{_cap(text)} on {when}."


def _clause(memory: Evidence) -> str:
    """The cause a memory states, as a clause ("the outage lasted six hours")."""
    return mid_sentence(cause_part(memory.text))


_YEAR = re.compile(r"\b(?:19|20)\d\d\b")


def _said(text: str) -> str:
    """A memory's sentence as the answer says it: "Tom: My brother Ravi ..." (a memory told with
    its speaker) reads "Tom's brother Ravi ..."."""
    who, value = told_by(text)
    if who is not None:
        value = in_third_person(value, who)
    value = _cap(value)
    return value if value.endswith((".", "!", "?")) else value + "."


def _timed_from(event: Evidence | None, memory: Evidence) -> bool:
    """The event was logged from that memory at a time of day: it says the time more exactly
    than the memory's words read by day."""
    at = _instant(event.at) if event is not None else None
    return event is not None and at is not None and memory.id in event.memories and (at.hour, at.minute) != (0, 0)


def _asked_window(query: str, plan: ClassifierOutput) -> Interval | None:
    """The span of time the question names with a year ("in 2023", "on 3 May 2024"). A time
    named relative to when it is asked ("yesterday", "in June") is left out: the memories may
    have been told relative to another time, and the search already favours the window."""
    tf = plan.timeframe
    if tf is None or tf.type == "relative" or not _YEAR.search(query):
        return None
    start = _instant(tf.value)
    return Interval(start, _instant(tf.end)) if start is not None else None


def _answering(spans: list[Span]) -> list[Span]:
    """The best span, and the best of another memory when it answers about as well (the
    evidence is split over two memories: both are said rather than one guessed)."""
    best = spans[0]
    second = next((s for s in spans[1:] if s.memory.id != best.memory.id), None)
    return [best, second] if second is not None and second.score >= SECOND_SPAN_SHARE * best.score else [best]


def _said_already(sentence: str, said: set[str]) -> bool:
    """Whether every content word of `sentence` is among `said` (the words of the facts' sentences
    before it): "The ledger database runs on the Birch cluster." after the fact that says it."""
    own = words(sentence)
    return bool(own) and own <= said


def _still_to_quote(memories: list[Evidence], sentences: list[str], window: Interval | None) -> list[Evidence]:
    """The memories worth quoting after the sentences said: not one whose every content word
    they said (an event's sentence is often its memory's, word for word), and, when dated events
    answered a question about a window, not one that tells of no time in it."""
    said = words(" ".join(sentences))
    out = [m for m in memories if not _said_already(told_by(m.text)[1], said)]
    return [m for m in out if tells_of(m, window)] if window is not None else out


def _span_sentence(span: Span) -> str:
    """An answering sentence in the third person ("Caroline went to ..."), naming who said it
    when the sentence does not and needs it ("Greta: Our flour came from ..."); one that reads
    alone ("Marco teaches physics ...") is said as it is."""
    text = _said(f"{span.speaker}: {span.sentence}" if span.speaker else span.sentence)
    if span.speaker and span.speaker.lower() not in text.lower() and not reads_alone(text):
        return f"{span.speaker}: {text}"
    return text


# A question about another time than now: its tense or its words say so.
_NOT_NOW = re.compile(r"\b(?:did|was|were|had|used to|before|after|ago|last|previous|first|originally)\b", re.I)


def asks_now(query: str, plan: ClassifierOutput) -> bool:
    """The question asks how things are now ("What instrument does Yuki play?"), not about a
    time or in the past tense ("What did Yuki play in 2025?", "what happened after ...")."""
    return asks(query) in ("what", "who") and plan.timeframe is None and not _NOT_NOW.search(query)


def newest_first(spans: list[Span]) -> list[Span]:
    """Answering sentences from several memories, the newest first: what was told last is
    the current state when two memories answer a question about now (a later change of
    instrument, of car, of address)."""
    return sorted(spans, key=lambda span: _told_of(span) or datetime.min.replace(tzinfo=UTC), reverse=True)


def _told_of(span: Span) -> datetime | None:
    """When what a sentence tells happened: the time it states, else when it was told."""
    at = told_at(span.memory)
    if at is None:
        return None
    stated = next(iter(told_times(span.sentence, at)), None)
    if stated is None:
        return at
    return datetime(stated.start.year, stated.start.month, stated.start.day, tzinfo=UTC)


def _earlier_sentence(span: Span) -> str:
    """An older memory's sentence after a newer one, said as the past it may be."""
    at = told_at(span.memory)
    when = f" (told on {day_text(at)})" if at is not None else ""
    return f"Earlier{when}: {_span_sentence(span)}"


def _when_sentence(span: Span) -> str:
    """When: the time the sentence states ("7 May 2023: Caroline went ... yesterday."), or, when
    it states none, the day it was told."""
    if span.time is not None:
        return f"{_cap(span.time.said)}: {_span_sentence(span)}"
    at = told_at(span.memory)
    return f"Told on {day_text(at)}: {_span_sentence(span)}" if at else _span_sentence(span)


def usable(item: Evidence) -> bool:
    """Evidence an answer can be made of: a link with both ends, a fact with its three parts,
    anything else with text."""
    if item.kind == "cause":
        return bool((item.cause or "").strip() and (item.effect or "").strip())
    if item.kind == "fact":
        return bool(item.subject and item.predicate and item.object)
    return bool(item.text.strip())


def missing_note(execution: Execution) -> str:
    parts = [f"the {g} graph timed out" for g in execution.timed_out]
    parts += [f"the {g} graph failed" for g in execution.failed]
    if not parts:
        return ""
    return f"({'; '.join(parts)}, so this answer may be incomplete.)"


def confidence(query: str, plan: ClassifierOutput, execution: Execution, evidence: Sequence[Evidence]) -> float:
    """Evidence strength (top scores), coverage (asked-for graphs that answered with something)
    and agreement (top items that mention what the query names); less for each missing graph."""
    if not evidence:
        return 0.0
    asked = set(plan.intents) | set(execution.results) | set(execution.missing)
    answered = {g for g, items in execution.results.items() if items}
    coverage = len(answered & asked) / len(asked) if asked else 0.0
    top = list(evidence[:3])
    strength = sum(min(max(e.score, 0.0), 1.0) for e in top) / len(top)
    terms = _terms(query, plan)
    top5 = list(evidence[:5])
    agreement = sum(1 for e in top5 if _mentions_any(e, terms)) / len(top5) if terms else 0.5
    score = 0.4 * coverage + 0.35 * strength + 0.25 * agreement - 0.1 * len(execution.missing)
    return round(min(max(score, 0.05), 0.95), 2)


def _terms(query: str, plan: ClassifierOutput) -> set[str]:
    words = {w for w in re.findall(r"[a-z0-9][a-z0-9_-]{2,}", query.lower()) if w not in _STOP}
    return words | {e.mention.lower() for e in plan.entities}


def _mentions_any(item: Evidence, terms: set[str]) -> bool:
    text = item.text.lower()
    return any(t in text for t in terms)


# --- causal chains ------------------------------------------------------------------------------


def _chain(links: list[Evidence]) -> list[Evidence]:
    """The strongest path of links ending at a final effect (an effect that causes nothing
    here), walked back to its root: [effect's link, its cause's link, ...]."""
    if not links:
        return []
    causes = {(e.cause or "").lower() for e in links}
    finals = [e for e in links if (e.effect or "").lower() not in causes] or links
    path = [max(finals, key=lambda e: (e.score, -e.depth))]
    seen = {(path[0].effect or "").lower(), (path[0].cause or "").lower()}
    while len(path) < MAX_CHAIN:
        into = [e for e in links if (e.effect or "").lower() == (path[-1].cause or "").lower() and e not in path]
        into = [e for e in into if (e.cause or "").lower() not in seen]
        if not into:
            break
        step = max(into, key=lambda e: e.score)
        seen.add((step.cause or "").lower())
        path.append(step)
    others = [e for e in links if e not in path and (e.effect or "").lower() == (path[0].effect or "").lower()]
    return path + sorted(others, key=lambda e: -e.score)[:2]


def _split(chain: list[Evidence]) -> tuple[list[Evidence], list[Evidence]]:
    """The chain's path from its final effect back to the root, and other direct causes."""
    final = (chain[0].effect or "").lower()
    path = [e for e in chain if e is chain[0] or (e.effect or "").lower() != final]
    return path, [e for e in chain[1:] if (e.effect or "").lower() == final]


def _chain_sentences(chain: list[Evidence], plan: ClassifierOutput) -> list[str]:
    if not chain:
        return []
    path, also = _split(chain)
    if plan.causal_direction == "downstream":
        steps = list(reversed(path))
        text = f"{_cap(steps[0].cause)} led to {mid_sentence(steps[0].effect)}"
        text += "".join(f", which led to {mid_sentence(e.effect)}" for e in steps[1:])
    else:
        effect = _cap(path[0].effect).strip().rstrip(".")
        # An effect extracted with its cause's words ("delayed due to a sandstorm") says it.
        text = effect if _names(effect, path[0].cause) else f"{effect} {because(path[0].cause)}"
        text += "".join(f", {because(e.cause)}" for e in path[1:])
        if also:
            text += "; also " + " and ".join(mid_sentence(e.cause) for e in also)
    return [text.rstrip(".") + "."]


def _names(text: str, part: str | None) -> bool:
    """Whether `text` holds `part` in its own words (case aside)."""
    said = (part or "").strip().rstrip(".").lower()
    return bool(said) and said in text.lower()


# --- time, facts, entities, memories ---------------------------------------------------------


def _timeline_sentences(events: list[Evidence]) -> list[str]:
    shown = events[:MAX_EVENTS_IN_ANSWER]
    out = [f"On {_when(e.at)}: {_cap(_without_day_words(e.text, e.at)).rstrip('.')}." for e in shown]
    if len(events) > len(shown):
        out.append(f"({len(events) - len(shown)} more events in that time.)")
    return out


def _without_day_words(text: str, at: str | None) -> str:
    """An event's text without the words naming its day relative to when it was told
    ("Yesterday we repainted the wall" on 2025-03-05: "we repainted the wall"): the date said
    before it replaces them. Words naming a week or a month stay (the date is its first day)."""
    when = _instant(at)
    if when is None:
        return text
    out = text
    for found in told_times(text, when):
        if found.precision == "day" and not any(c.isdigit() for c in found.words):
            out = out.replace(found.words, " ", 1)
    out = re.sub(r"\s+([,.!?])", r"\1", re.sub(r"\s{2,}", " ", out)).strip(" ,")
    return out or text


def _contradicts(sentence: str, holding: list[Evidence]) -> bool:
    """Whether a sentence states a value a current fact has replaced: its subject and its
    predicate's verb, another object ("The payroll service runs on the Atlas cluster" once it
    runs on Boreal). Asked how things are now, it is no answer."""
    said = sentence.lower()
    keys = {word_key(w) for w in re.findall(r"[a-z]+", said)}
    for fact in holding:
        subject, obj = (fact.subject or "").lower(), (fact.object or "").lower()
        verb = (fact.predicate or "").split("_")[0]
        if subject and obj and subject in said and word_key(verb) in keys and obj not in said:
            return True
    return False


def _holds(fact: Evidence, plan: ClassifierOutput, reference: datetime) -> bool:
    """A fact counts when it holds now, or in the time the query asks about."""
    start, end = _instant(fact.at), _instant(fact.valid_to)
    tf = plan.timeframe
    if tf is not None and tf.type != "relative":
        ask_start, ask_end = _instant(tf.value), _instant(tf.end)
        if ask_start is not None:
            return (end is None or end > ask_start) and (start is None or ask_end is None or start < ask_end)
    return end is None or end > reference


def _fact_sentences(facts: list[Evidence]) -> list[str]:
    return [fact_sentence(fact, _validity(fact)) for fact in facts]


def _validity(fact: Evidence) -> str | None:
    """When the fact held: "since June 2025", or "from ... until ..." for one that ended."""
    if fact.valid_to:
        return f"from {_since(fact.at) if fact.at else 'an unknown time'} until {_since(fact.valid_to)}"
    return f"since {_since(fact.at)}" if fact.at else None


def _since(value: str | None) -> str:
    """A fact's start as a person says it: "March 2025" for the first of a month, else the day."""
    at = _instant(value)
    if at is None:
        return value or "an unknown time"
    if at.day == 1 and (at.hour, at.minute) == (0, 0):
        return at.strftime("%B %Y")
    return at.strftime("%Y-%m-%d")


def _entity_sentences(entities: list[Evidence], facts: list[Evidence]) -> list[str]:
    with_facts = {(f.subject or "").lower() for f in facts}
    out = []
    for entity in entities:
        if entity.text and entity.text.lower() not in with_facts:
            out.append(f"{_cap(entity.text).rstrip('.')}.")
    return out


def _memory_sentence(memories: list[Evidence]) -> str:
    quoted = "; ".join(f"\u201c{m.text.strip()}\u201d" for m in memories[:MAX_MEMORIES_IN_ANSWER])
    return f"Stored memories: {quoted}."


def _temporal_context(plan: ClassifierOutput, events: list[Evidence]) -> TemporalContext | None:
    if not events and plan.timeframe is None:
        return None
    tf = plan.timeframe
    start = tf.value if tf is not None and tf.type != "relative" else None
    return TemporalContext(
        start=start,
        end=tf.end if tf is not None else None,
        events=[TimedEvent(id=e.id, at=e.at or "", description=e.text) for e in events],
    )


def _entities_involved(plan: ClassifierOutput, entities: list[Evidence], facts: list[Evidence]) -> list[EntityInvolved]:
    out = [
        EntityInvolved(
            id=e.id,
            name=e.subject or e.text,
            type=e.predicate,
            current_facts=[
                f"{f.predicate} {f.object}" for f in facts if (f.subject or "").lower() == (e.subject or e.text).lower()
            ],
        )
        for e in entities
    ]
    named = {x.name.lower() for x in out}
    for mention in plan.entities:
        if mention.resolved and mention.mention.lower() not in named:
            out.append(EntityInvolved(id=mention.resolved, name=mention.mention, type=mention.type))
    return out


def follow_ups(
    chain: list[Evidence], events: list[Evidence], entities: list[Evidence], memories: list[Evidence]
) -> list[str]:
    """Questions about what lies next to the evidence in the graph."""
    out: list[str] = []
    if chain:
        root = _split(chain)[0][-1].cause
        out.append(f"What else did {root} lead to?")
    elif events:
        out.append(f"What caused {_short(events[-1].text)}?")
    for item in [*entities, *memories]:
        for neighbour in item.neighbours[:1]:
            question = f"What do we know about {neighbour}?"
            if question not in out:
                out.append(question)
    return out[:3]


# --- the LLM path --------------------------------------------------------------------------------


class LLMSynthesis(BaseModel):
    answer: str = Field(min_length=1, max_length=8000)
    confidence: float = Field(ge=0.0, le=1.0)
    cited_ids: list[str] = Field(min_length=1)
    follow_ups: list[str] = Field(default_factory=list, max_length=5)


def evidence_json(evidence: Sequence[Evidence]) -> str:
    rows = []
    for e in evidence:
        row: dict[str, object] = {
            "id": e.id,
            "graph": e.graph,
            "kind": e.kind,
            "text": e.text,
            "score": round(e.score, 3),
        }
        for key in ("at", "cause", "effect", "subject", "predicate", "object", "valid_to"):
            value = getattr(e, key)
            if value:
                row[key] = value
        rows.append(row)
    return json.dumps(rows, ensure_ascii=False, indent=1)


async def _rules_off_the_loop(
    query: str, plan: ClassifierOutput, execution: Execution, reference: datetime
) -> SynthesizerOutput:
    """The rules in a worker thread: an answer said in the third person may parse its sentence
    (`third_person`, a few ms when the parse is not kept), which must not hold the event loop."""
    return await asyncio.to_thread(rule_synthesise, query, plan, execution, reference)


class Synthesiser:
    """Rules, or an LLM over the same evidence that must cite it (`llm` None: rules only)."""

    def __init__(self, llm: LLM | None = None, *, timeout_s: float | None = None, max_evidence: int = 30) -> None:
        self.llm = llm
        self.max_evidence = max_evidence
        self._call = with_fallback(
            self._llm_synthesise if llm is not None else None,
            _rules_off_the_loop,
            name="recall synthesiser",
            timeout_s=timeout_s,
        )

    async def synthesise(
        self, query: str, plan: ClassifierOutput, execution: Execution, reference: datetime
    ) -> Answer[SynthesizerOutput]:
        return await self._call.run(query, plan, execution, reference)

    async def _llm_synthesise(
        self, query: str, plan: ClassifierOutput, execution: Execution, reference: datetime
    ) -> SynthesizerOutput:
        assert self.llm is not None
        rules = rule_synthesise(query, plan, execution, reference)
        evidence = [e for e in best_first(execution.evidence()) if usable(e)][: self.max_evidence]
        if not evidence:
            return rules  # nothing to cite: the honest answer needs no model
        prompt = SYNTHESIZER_PROMPT.replace("{query}", query).replace("{results}", evidence_json(evidence))
        messages: list[Message] = [{"role": "user", "content": prompt}]
        proposed = await self.llm.complete_json(messages, LLMSynthesis, max_tokens=SYNTHESIZER_MAX_TOKENS)
        known = {e.id for e in evidence}
        unknown = [i for i in proposed.cited_ids if i not in known]
        if unknown:
            raise LLMInvalidOutput(
                f"the synthesis cites {len(unknown)} id(s) that are not among the evidence",
                details={"unknown": unknown[:5]},
            )
        note = missing_note(execution)
        answer = proposed.answer.strip() + (f" {note}" if note and note not in proposed.answer else "")
        return rules.model_copy(
            update={
                "answer": answer,
                "confidence": round(min(proposed.confidence, rules.confidence + 0.2, 0.95), 2),
                "follow_ups": [q.strip() for q in proposed.follow_ups if q.strip()][:3] or rules.follow_ups,
            }
        )


# --- small helpers -------------------------------------------------------------------------------


def _sources(used: list[Evidence]) -> list[str]:
    order: list[GraphName] = ["causal", "temporal", "entity", "semantic"]
    present = {e.graph for e in used}
    return [g for g in order if g in present]


def _instant(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return parse_instant(value)
    except (PolygError, ValueError, OverflowError):
        return None


def _when(value: str | None) -> str:
    at = _instant(value)
    if at is None:
        return value or "an unknown time"
    if (at.hour, at.minute, at.second) == (0, 0, 0):
        return at.strftime("%Y-%m-%d")
    return at.strftime("%Y-%m-%d %H:%M UTC")


def _short(text: str, words: int = 12) -> str:
    parts = text.rstrip(".").split()
    short = " ".join(parts[:words])
    return (short[:1].lower() + short[1:]) if short else short


def _cap(text: str | None) -> str:
    value = (text or "").strip()
    return value[:1].upper() + value[1:]
