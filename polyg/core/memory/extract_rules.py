"""What `remember` extracts from a memory, read from its dependency parse (polyg.nlp.pipeline):
entities as a person names them, facts with a canonical predicate and the validity the sentence
states, events at the time it states, and the causal links it states.

- A name is a head noun with the words that are part of how it is called: its compounds and
  proper-noun modifiers, or the named-entity span around it; never its article, a date, a
  clause word or a trailing prepositional phrase ("the payments team on day 0" is
  `payments team`). Common nouns are names only when they name a system, a team, a project...
  by a head noun with a modifier ("the data pipeline", "the auth service").
- "I", "me", "my" are the memory's speaker (its context); "he", "she", "him", "her" are the
  last person named in the memory when it named only one.
- Facts come from the verb and its arguments ("works on", "joined", "moved to", "owns",
  "depends on", passive "is owned by"), copular and role sentences ("X is the tech lead of Y",
  "X replaced Y as lead of W"), one fact per conjunct ("depends on A and B"). Predicates are
  canonical, chosen by the object's type where a verb can mean several ("joined the Search
  team" and "works on the Billing team" are both `member_of`), so that a single-valued one
  closes the previous value whatever verb stated it.
- Causal links come from "because (of)", "due to", "caused by", "led to", "resulted in",
  ", so", "after ... failed" and passive agents ("was broken by"); a negated link adds nothing.
- A sentence that is not English prose (code, a table, a URL list, another language) adds no
  entity: a wrong item costs more than a missing one (the memory itself is always stored).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from polyg.core.memory.aliases import KnownNames
from polyg.core.memory.extraction import ExtractedCause, ExtractedEntity, ExtractedEvent, ExtractedFact, Extraction
from polyg.core.memory.heads import (
    COMMON_NAME_HEADS,
    EVENT_HEADS,
    NAME_HEADS,
    ORG_HEADS,
    PLACE_HEADS,
    PROJECT_HEADS,
    SCHOOL_HEADS,
    SERVICE_HEADS,
    TEAM_HEADS,
)
from polyg.core.text import word_prior
from polyg.core.text.mentions import TIME_WORDS as MENTION_TIME_WORDS
from polyg.core.text.mentions import Mention, code_mentions
from polyg.core.text.time import Interval, parse_instant, parse_range
from polyg.core.text.timeref import find_time_refs
from polyg.errors import PolygError
from polyg.nlp.pipeline import pipeline

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

log = logging.getLogger(__name__)

MAX_PHRASE_CHARS = 300
# A sentence longer than this (in tokens) is a table, a log or a paste, not a statement.
MAX_SENTENCE_TOKENS = 80

# --- types by head noun: polyg.core.memory.heads ---------------------------------------------
_NER_TYPES = {
    "PERSON": "Person",
    "ORG": "Organisation",
    "GPE": "Place",
    "LOC": "Place",
    "FAC": "Place",
    "PRODUCT": "Product",
    "EVENT": "Event",
    "WORK_OF_ART": "Work",
    "LAW": "Work",
}
_NOT_NAMES = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "MONEY", "PERCENT", "QUANTITY", "NORP", "LANGUAGE"})
# Never inside a name: "the payments team on day 0" is no "day 0 payments team".
_NOT_IN_NAMES = frozenset({"DATE", "TIME", "MONEY", "PERCENT", "QUANTITY"})
# Time words that are never (part of) a name, whatever the tagger says.
TIME_WORDS = (MENTION_TIME_WORDS - {"new", "year's", "eve", "fall", "spring", "day"}) | frozenset(
    "week month year weekend morning evening night afternoon day last next mon wed sat sun".split()
)
# Words a name never starts with: interjections, greetings, discourse words.
_NEVER_OPENS = frozenset(
    "wow thanks thank hey hi hello yeah yes yep nope sure congrats glad sorry oh ah oops hmm ok okay well "
    "anyway cheers dear".split()
)
# Verbs whose subject is a person (a name the tagger calls an organisation or nothing).
PERSON_VERBS = frozenset(
    "work live report replace marry say tell think feel love hate restart fix deploy debug write "
    "visit call meet email ask promise decide teach coach play travel study sing paint cook bake adopt "
    "present graduate retire hike swim join lead manage own maintain merge rotate roll repaint rebuild "
    "launch open quit resign marry believe want laugh cry eat drink walk drive fly celebrate explain "
    "learn teach mentor interview promote hire approve review supervise oversee chair coordinate quit leave "
    "resign retire succeed curate direct".split()
)
_SPEAKER = frozenset({"i", "me", "my", "myself", "mine"})
# Titles before a person's name: "Dr Radomir Halvorsen" is called Radomir Halvorsen (a title
# with a surname alone, "Mr. Patel", is how that person is called and stays).
TITLES = frozenset(
    "mr mr. mrs mrs. ms ms. miss dr dr. prof prof. professor sir dame councillor councilor cllr cllr. "
    "senator judge nurse father sister brother rev rev. reverend captain capt capt. chef coach officer sergeant sgt "
    "lieutenant inspector detective mayor minister governor lord lady".split()
)
_PERSON_PRONOUNS = frozenset({"he", "she", "him", "her", "his", "hers", "himself", "herself"})
_WE = frozenset({"we"})

# --- facts ----------------------------------------------------------------------------------
# Roles whose holder leads what they are the role of ("the tech lead of", "the manager of").
LEAD_ROLES = frozenset(
    "lead manager head director chief captain boss supervisor chair president ceo cto cfo coo vp "
    "leader founder principal coach dean mayor editor conductor chairman chairwoman chairperson".split()
)
# Jobs: "an engineer at Acme" works there.
JOB_NOUNS = frozenset(
    "engineer developer designer analyst scientist intern researcher consultant architect writer "
    "programmer administrator admin accountant nurse doctor teacher professor student contractor "
    "employee member sre tester recruiter pupil".split()
)
_PUPILS = frozenset({"student", "pupil"})
# Verbs with a preposition: (lemma, preposition) -> predicate (None: by the object's type).
PREP_VERBS: dict[tuple[str, str], str | None] = {
    ("work", "on"): "works_on?",
    ("work", "at"): "works_at?",
    ("work", "for"): "works_at?",
    ("work", "in"): None,
    ("work", "with"): "works_with",
    ("contribute", "to"): "works_on",
    ("study", "at"): "studies_at?",
    ("study", "in"): "studies_at?",
    ("go", "to"): "studies_at?",
    ("start", "at"): "studies_at?",
    ("enrol", "at"): "studies_at?",
    ("enroll", "at"): "studies_at?",
    ("enrol", "in"): "studies_at?",
    ("enroll", "in"): "studies_at?",
    ("sit", "on"): "sits_on?",
    ("serve", "on"): "sits_on?",
    ("teach", "at"): "works_at?",
    ("teach", "in"): "works_at?",
    ("play", "in"): "member_of",
    ("play", "for"): "member_of",
    # Doing one's job for an employer: "drives for", "flies for", "writes for the Tribune".
    ("drive", "for"): "works_at?",
    ("ride", "for"): "works_at?",
    ("fly", "for"): "works_at?",
    ("write", "for"): "works_at?",
    ("deliver", "for"): "works_at?",
    ("consult", "for"): "works_at?",
    ("move", "to"): None,
    ("relocate", "to"): None,
    ("transfer", "to"): None,
    ("switch", "to"): None,
    ("live", "in"): "lives_in",
    ("report", "to"): "reports_to",
    ("depend", "on"): "depends_on",
    ("rely", "on"): "depends_on",
    ("run", "on"): "runs_on",
    ("belong", "to"): "part_of",
    ("marry", "to"): "married_to",
    ("base", "in"): "based_in",
    ("locate", "in"): "located_in",
}
# Verbs with an object: lemma -> predicate (None: by the object's type).
OBJECT_VERBS: dict[str, str | None] = {
    "join": None,
    "own": "owns",
    "maintain": "maintains",
    "lead": "leads",
    "manage": "leads",
    "head": "leads",
    "run": "leads",
    "supervise": "leads",
    "oversee": "leads",
    "chair": "leads",
    "coordinate": "leads",
    "captain": "leads",
    "coach": "leads",
    "conduct": "leads",
    "direct": "leads",
    "use": "uses",
    "marry": "married_to",
    "prefer": "prefers",
    "love": "likes",
    "like": "likes",
    "enjoy": "likes",
    "attend": "studies_at?",
}
# Passive forms read as their active sentence ("is owned by X" is X owns it).
PASSIVE_VERBS: dict[str, str] = {
    "own": "owns",
    "maintain": "maintains",
    "lead": "leads",
    "manage": "leads",
    "head": "leads",
    "run": "leads",
    "supervise": "leads",
    "oversee": "leads",
    "chair": "leads",
    "coordinate": "leads",
    "use": "uses",
}

# --- causes ---------------------------------------------------------------------------------
# Verbs whose subject caused their object: "A caused B", "A led to B", "A resulted in B".
CAUSE_VERBS: dict[str, str | None] = {
    "cause": None,
    "trigger": None,
    "lead": "to",
    "result": "in",
    "spark": None,
    "provoke": None,
}
# Verbs of damage: "A broke B", passive "B was broken by A" (the effect says what happened).
DAMAGE_VERBS = frozenset(
    "break crash delay block corrupt overload kill interrupt disrupt halt stop slow disable destroy damage ruin "
    "wreck "
    "exhaust overwhelm take bring knock".split()
)
# Verbs that say something failed: "after X failed, Y" reads X as Y's cause.
FAIL_VERBS = frozenset(
    "fail crash break expire stop die hang leak overflow fill time run go timeout degrade collapse error snap burst "
    "flood freeze overheat crack jam stall trip short".split()
)
_NEG = frozenset({"not", "n't", "never", "no"})


@dataclass
class _Memory:
    """What one memory has named so far: its entities and people, for the sentences after."""

    reference: datetime
    speaker: str | None
    entities: dict[str, ExtractedEntity]
    people: list[str]
    previous_clause: str = ""
    previous_subject: str = ""  # the name the sentence before had as its subject
    # Names a fact's arguments would add (with their types), added once a fact states them.
    pending: dict[str, str | None] = field(default_factory=dict)
    # The code identifiers of the sentence being read: (start, end) in the text -> the name.
    codes: dict[tuple[int, int], str] = field(default_factory=dict)
    # The graph's names, for resolution (`_canon`: the rule recall reads a question's names by).
    known: KnownNames = field(default_factory=KnownNames)


def extract(
    content: str, reference: datetime, speaker: str | None = None, known_names: Iterable[str] = ()
) -> Extraction:
    """Entities, events, facts and causal links of `content`, said at `reference` by `speaker`
    (the memory's context, whom "I" names); `known_names`: names the graph knows (each is an
    entity where a sentence names it, as the graph spells it)."""
    return extract_doc(pipeline().parse(content), reference, speaker, known_names)


def extract_doc(
    doc: Doc, reference: datetime, speaker: str | None = None, known_names: Iterable[str] = ()
) -> Extraction:
    out = Extraction()
    memory = _Memory(reference, speaker.strip() if speaker and speaker.strip() else None, {}, [])
    names = [n.strip() for n in known_names if n.strip()]
    memory.known = KnownNames.of(names)
    # A pattern only for the names the text holds (the graph may offer 50 that share a word).
    lowered = doc.text.lower()
    known = [(n, re.compile(rf"(?<!\w){re.escape(n)}(?!\w)", re.IGNORECASE)) for n in names if n.lower() in lowered]
    for sentence in doc.sents:
        for name, pattern in known:
            if pattern.search(sentence.text):
                _add_entity(memory, name, None)
        # A word in letters alone ("BigQuery", "DevOps") is a product's name more often than
        # code: the parse types it.
        codes = [c for c in code_mentions(sentence.text) if not c.text.isalpha()]
        if not _prose(sentence, codes):
            continue
        memory.codes = {(sentence.start_char + c.start, sentence.start_char + c.end): c.text for c in codes}
        for code in codes:
            _add_entity(memory, code.text, "Code")
        before = (dict(memory.entities), list(memory.people), len(out.facts), len(out.events), len(out.causes))
        try:
            _read_sentence(sentence, memory, out, [c.text for c in codes])
        except Exception as exc:  # a parse no rule foresaw: the sentence adds nothing, the memory stays
            memory.entities, memory.people = before[0], before[1]
            del out.facts[before[2] :], out.events[before[3] :], out.causes[before[4] :]
            log.warning("extraction skipped a sentence of %d characters: %s", len(sentence.text), type(exc).__name__)
        memory.previous_clause = _clause(sentence.root, set())
        memory.previous_subject = _subject_name(sentence, memory)
    out.entities = list(memory.entities.values())
    return out


# --- one sentence ---------------------------------------------------------------------------


def _read_sentence(sentence: Span, memory: _Memory, out: Extraction, codes: list[str]) -> None:
    names: list[str] = list(codes)
    mentions = _mentions(sentence, memory)
    for name, kind in mentions:
        _add_entity(memory, name, kind)
        names.append(name)
    _people_in_lists(sentence, memory)
    # The person a pronoun stands for is in the sentence too ("She moved to Oslo").
    if len(set(memory.people)) == 1 and any(t.lower_ in _PERSON_PRONOUNS for t in sentence):
        names.append(memory.people[-1])
    time = _times(sentence, memory.reference)
    if time.event_at is None and (time.valid_from or time.valid_to):
        # A span in one clause ("have sat on X since 2023") does not hide the date another
        # states ("moved to Y in 2021"): the main clause's own time dates the sentence's event.
        main = _times(sentence, memory.reference, _attached_offsets(sentence, sentence.root))
        if main.event_at is not None:
            time = main
    for fact, verb in _facts(sentence, memory):
        # The time of the fact's own clause ("left X in 2024 and joined Y in January 2025"),
        # else a time the parse attaches to its verb's clause: never one of another clause
        # ("works at X and has volunteered at Y since August" states no start of the job).
        own = _times(sentence, memory.reference, _clause_offsets(verb) & _attached_offsets(sentence, verb))
        held = (
            own
            if (own.valid_from or own.valid_to)
            else _times(sentence, memory.reference, _attached_offsets(sentence, verb))
        )
        if fact.ends:
            # It held until the time its clause states (the start of that period: "left in
            # 2024"), else until it was said.
            until = held.valid_from or held.valid_to or memory.reference
            fact = ExtractedFact(fact.subject, fact.predicate, fact.object, None, until, ends=True)
        else:
            fact = ExtractedFact(fact.subject, fact.predicate, fact.object, held.valid_from, held.valid_to)
        if fact not in out.facts:
            out.facts.append(fact)
    sentence_event = len(out.events)  # where the sentence's own event goes, if it has one
    if time.event_at is not None:
        out.events.append(
            ExtractedEvent(_clip(sentence.text.strip()), time.event_at, time.text, tuple(dict.fromkeys(names)))
        )
        # A clause joined to the first with a time of its own is a second event ("moved to Leeds
        # in 2019 and became mayor in 2024").
        for verb in sentence:
            if verb.dep_ != "conj" or verb.pos_ != "VERB" or verb.head.pos_ not in ("VERB", "AUX"):
                continue
            own = _times(sentence, memory.reference, _clause_offsets(verb))
            if own.event_at is None or own.event_at == time.event_at:
                continue
            clause = _clause(verb, _conj_ids(verb))
            subjects = _subjects(verb)
            if subjects and subjects[0].head.i != verb.i:
                clause = f"{_text(list(subjects[0].subtree))} {clause}"
            out.events.append(ExtractedEvent(_clip(clause), own.event_at, own.text, tuple(dict.fromkeys(names))))
    dated: list[str] = []
    for cause in _causes(sentence, memory, dated):
        if cause not in out.causes:
            out.causes.append(cause)
    if time.event_at is not None and len(set(dated)) == 1:
        # The cause or effect the sentence's time opened is the event it dates: logged as that
        # phrase, so the link (which finds the event by its text) attaches to the dated event,
        # not to an undated copy. The memory keeps the whole sentence.
        out.events[sentence_event] = replace(out.events[sentence_event], description=dated[0])


def _subject_name(sentence: Span, memory: _Memory) -> str:
    subject = next((c for c in sentence.root.children if c.dep_ in ("nsubj", "nsubjpass")), None)
    if subject is None:
        return ""
    if subject.lower_ in _PERSON_PRONOUNS:
        return memory.previous_subject  # still the same person
    named = _name(subject) if _name_head(subject) is subject else None
    return named[0] if named is not None else ""


def _people_in_lists(sentence: Span, memory: _Memory) -> None:
    """An untyped name listed with a person's ("Rohan and Leila") is a person's."""
    for token in sentence:
        if token.dep_ != "conj" or token.pos_ != "PROPN":
            continue
        pair = [token, token.head]
        if memory.speaker and any(t.lower_ in _SPEAKER for t in pair):
            other = next(t for t in pair if t.lower_ not in _SPEAKER)
            named = _name(other) if other.pos_ == "PROPN" else None
            if named is not None and named[1] is None:
                _retype(memory, named[0], "Person")
            continue
        names = [_name(t) for t in pair if t.pos_ == "PROPN"]
        if len(names) != 2 or None in names:
            continue
        kinds = {n[1] for n in names if n is not None}
        if "Person" in kinds and kinds <= {"Person", None}:
            for named in names:
                if named is not None and named[1] is None:
                    _retype(memory, named[0], "Person")


def _canon(memory: _Memory, name: str, kind: str | None = None) -> str:
    """The name as the graph spells the entity it means (`polyg.core.memory.aliases`): the same
    words ("the auth service" for "Auth Service"), or the only known person with this first
    name ("Alice" for "Alice Chen"); else the name itself."""
    return memory.known.meant(name, kind, memory.speaker)


def _add_entity(memory: _Memory, name: str, kind: str | None) -> None:
    name = _canon(memory, name, kind)
    key = name.lower()
    held = memory.entities.get(key)
    if held is None or (held.type is None and kind is not None):
        memory.entities[key] = ExtractedEntity(held.name if held else name, kind)
    if kind == "Person" and name != memory.speaker:
        if name in memory.people:
            memory.people.remove(name)
        memory.people.append(name)


_CODE_LINE = re.compile(
    r"^\s*(?:def|class|return|import|from|function|const|let|var|select|insert|update|delete)\b.*[(:=;{*]|"
    r"==|=>|\(\)\s*[:;{]|;\s*$|^\s*[|+]|\b(?:ERROR|WARN|INFO|DEBUG)\b",
    re.IGNORECASE,
)


def _prose(sentence: Span, codes: list[Mention]) -> bool:
    """Whether a sentence reads as English prose: not too long, mostly words, and mostly words
    the English vocabulary knows (not code, a table, a URL list or another language). A code
    identifier the sentence names counts as one word ("Rafael fixed render_report() ...")."""
    base = sentence.start_char
    inside = [(base + c.start, base + c.end) for c in codes]
    tokens: list[Token] = []
    for t in sentence:
        if t.is_space:
            continue
        within = next((span for span in inside if span[0] <= t.idx < span[1]), None)
        if within is not None:
            if tokens and tokens[-1].idx >= within[0]:
                continue  # the identifier's other pieces
            tokens.append(sentence.doc[t.i])
            continue
        tokens.append(t)
    codes_at = {t.i for t in tokens if any(s <= t.idx < e for s, e in inside)}
    if not tokens or len(tokens) > MAX_SENTENCE_TOKENS or _CODE_LINE.search(sentence.text):
        return False
    words = [t for t in tokens if t.is_alpha or t.i in codes_at]
    punctuation = [t for t in tokens if t.is_punct or t.is_space]
    if not words or len(words) < 0.6 * (len(tokens) - len(punctuation)) or len(punctuation) > 0.35 * len(tokens):
        return False
    if any(t.like_url or t.like_email for t in tokens) and len(words) < 4:
        return False
    # Latin script (accents included: "Valparaíso"); another script is another language.
    ascii_words = [t for t in words if all(ord(ch) < 0x250 for ch in t.text) and t.i not in codes_at]
    if len(ascii_words) < 0.9 * (len(words) - len(codes_at)):
        return False
    lower = [t for t in ascii_words if t.text.islower()]
    if len(lower) >= 4:
        # A word the English vocabulary holds whole (not split into pieces).
        # English prose has English function words ("the", "to", "is") or, when terse, words
        # the vocabulary holds; another language has neither.
        stops = sum(1 for t in lower if t.is_stop)
        known = sum(1 for t in lower if t.is_stop or word_prior.informativeness(t.lower_) < 1.0)
        if stops < 0.2 * len(lower) and known < 0.6 * len(lower):
            return False
    return True


# --- names ----------------------------------------------------------------------------------


def _mentions(sentence: Span, memory: _Memory) -> list[tuple[str, str | None]]:
    """The sentence's names in order, each with its type."""
    found: dict[int, tuple[str, str | None]] = {}
    for token in sentence:
        if token.lower_ in _SPEAKER and memory.speaker and token.pos_ == "PRON":
            found.setdefault(token.i, (memory.speaker, "Person"))
            continue
        head = _name_head(token)
        if head is None or head.i in found:
            continue
        named = _name(head)
        if named is not None:
            found[head.i] = (_canon(memory, named[0], named[1]), named[1])
    return [found[i] for i in sorted(found)]


def _swallowed(token: Token) -> bool:
    """A proper noun the tagger put inside a time ("at 7pm Rohan and Leila"): a name."""
    return token.ent_type_ in ("TIME", "DATE") and token.pos_ == "PROPN" and token.lower_ not in TIME_WORDS


def _name_head(token: Token) -> Token | None:
    """The head of the name `token` is part of, when it is part of one."""
    if (token.ent_type_ in _NOT_NAMES and not _swallowed(token) and not _misread_group(token)) or (
        token.lower_ in TIME_WORDS
    ):
        return None
    if _proper(token):
        head = token
        while (
            head.dep_ in ("compound", "flat")
            or (head.dep_ == "amod" and head.head.lemma_.lower() in NAME_HEADS)
            or (head.head.i != head.i and head.head.ent_iob_ == "I" and head.ent_iob_ != "O" and head.head.i > head.i)
        ):
            if head.head.i == head.i:
                break
            head = head.head
        joined = _ampersand_end(head)
        if joined is not None:
            return joined  # "Hollis & Crane": one name, not "Hollis" and another
        return head if head.pos_ in ("PROPN", "NOUN", "X") else token
    if token.pos_ == "NOUN" and token.lemma_.lower() in COMMON_NAME_HEADS and token.dep_ not in ("compound",):
        return token
    if (
        token.pos_ in ("ADJ", "PROPN")
        and token.text == token.lower_
        and token.lower_ in COMMON_NAME_HEADS
        and token.dep_ in ("nsubj", "nsubjpass", "dobj", "pobj", "conj", "attr", "appos")
    ):
        return token  # "The booking portal depends on ...": a head noun the tagger mistagged
    return None


def _misread_group(token: Token) -> bool:
    """A singular proper noun the tagger called a nationality or a group ("Two days ago Solveig
    presented ..."): a nationality names people as a plural or an adjective, not as one
    subject or object."""
    if token.ent_type_ != "NORP" or token.dep_ not in ("nsubj", "nsubjpass", "dobj", "pobj"):
        return False
    # A nationality's word as the head of a company's or a team's name ("Swiftspoke Couriers",
    # "the Logistics team") is a name's.
    return token.tag_ == "NNP" or (token.tag_ == "NNPS" and token.lower_ in NAME_HEADS)


def _ampersand_end(token: Token) -> Token | None:
    """The last word of the organisation's name `token` opens when the name holds an "&"
    ("Hollis & Crane", "Procter & Gamble"), which the parser reads as a list."""
    if token.ent_iob_ != "B" or token.ent_type_ not in ("ORG", "FAC", "PRODUCT", "WORK_OF_ART"):
        return None
    end = token.i + 1
    while end < len(token.doc) and token.doc[end].ent_iob_ == "I":
        end += 1
    span = token.doc[token.i : end]
    return span[-1] if len(span) > 2 and any(t.text == "&" for t in span) else None


def _name(head: Token) -> tuple[str, str | None] | None:
    """The name whose head is `head` and its type, or None when it is no name."""
    tokens = _name_tokens(head)
    if not tokens:
        return None
    while tokens and tokens[0].lower_ in _NEVER_OPENS:
        tokens.pop(0)
    titled = bool(tokens) and tokens[0].lower_ in TITLES and tokens[0].text[:1].isupper() and len(tokens) > 1
    if titled and len(tokens) > 2:
        tokens.pop(0)
    if not tokens or any(
        not _wordlike(t) or (t.lower_ in TIME_WORDS and not _named_time_word(t, head)) for t in tokens
    ):
        return None
    proper = any(_proper(t) for t in tokens)
    if proper and any(
        t.is_alpha
        and t.text == t.lower_
        and t.i != head.i
        and t.lower_ not in _NAME_CONNECTORS
        and not _purpose(t, head)
        for t in tokens
    ):
        return None  # "El equipo de pagos trabaja": a clause, not a name
    if not proper:
        # A common noun names a thing only with its head noun and a modifier ("data pipeline").
        if head.lemma_.lower() not in COMMON_NAME_HEADS or len(tokens) < 2:
            return None
    if proper and head.pos_ == "PROPN" and head.i == tokens[0].i and len(tokens) == 1:
        # A lone capitalised word opening a sentence is a name only when the tagger says so.
        if head.i == head.sent.start and not head.ent_type_ and word_prior.common_word(head.text):
            return None
        if head.i == head.sent.start and not head.ent_type_ and not any(t.pos_ == "VERB" for t in head.sent):
            return None  # "Super stoked!": no statement names anything
    text = _text(tokens)
    if not text or len(text) > 100 or text.lower() in LEAD_ROLES | JOB_NOUNS:
        return None  # "Our new CTO is ...": a role, not a name
    return text, "Person" if titled else _type(tokens, head)


def _named_time_word(token: Token, head: Token) -> bool:
    """A capitalised time word inside a name the tagger spans as one ("the Morning Ledger",
    "the Sunday Times"): part of the name, not a date."""
    return (
        token.i != head.i
        and token.text[:1].isupper()
        and not token.is_sent_start
        and head.lower_ not in TIME_WORDS
        and bool(token.ent_type_)
        and token.ent_type_ == head.ent_type_
        and token.ent_type_ not in _NOT_NAMES
        and head.ent_iob_ == "I"
    )


# Participles that say a system's state, not what it is for ("the failing service" is no name;
# "the tracking API", "the booking portal" are).
_STATE_PARTICIPLES = frozenset(
    "failing running existing remaining missing upcoming growing ongoing leaking crashing working "
    "broken changing coming following leading pending".split()
)


def _purpose(token: Token, head: Token) -> bool:
    """A lower-case word in front of a system's head noun that says what it is for ("the
    tracking API", "the booking portal"), as a compound or a participle the tagger read."""
    return (
        head.lemma_.lower() in COMMON_NAME_HEADS
        and token.i < head.i
        and (token.tag_ == "VBG" or token.dep_ == "compound" or token.pos_ == "NOUN")
        and token.lower_ not in _STATE_PARTICIPLES
    )


def _proper(token: Token) -> bool:
    """Whether a word is (part of) a proper name: the tagger's proper noun or named entity,
    written with a capital (a lower-case one is a tagging slip: "config push", "lol"), or a
    capitalised word that is a name all the same (`_capitalised_name`)."""
    if token.text == token.lower_:
        return False
    if token.text.isupper() and token.lower_ in COMMON_NAME_HEADS:
        return False  # "API", "CLI", "SDK": a kind of system, written in capitals
    if token.pos_ == "PROPN" or (token.ent_type_ and token.ent_type_ not in _NOT_NAMES) or _swallowed(token):
        return True
    return _capitalised_name(token)


def _capitalised_name(token: Token) -> bool:
    """A capitalised word the tagger read as a common noun that is a name all the same: one
    the text capitalises mid-sentence, or one the English vocabulary does not know as a word
    ("Rowling is...", "Postgres is down")."""
    if not token.text[:1].isupper() or not token.is_alpha or token.text.isupper() or token.lower_ == "i":
        return False
    if token.lower_ in TIME_WORDS:
        return False
    if not token.is_sent_start:
        # Mid-sentence, a capital says name, whatever the tagger made of it ("uses Airflow").
        prev = token.nbor(-1)
        return token.pos_ in ("NOUN", "ADV", "ADJ", "VERB") and not (prev.is_punct and prev.text in ':"“(')
    if token.pos_ != "NOUN" and not (
        # An unfamiliar name opening the sentence, tagged as a verb or an adjective ("Amadou
        # owns two bistros").
        token.pos_ in ("VERB", "ADJ") and token.dep_ in ("nsubj", "nsubjpass") and token.head.pos_ in ("VERB", "AUX")
    ):
        return False
    if token.lower_ in _NEVER_OPENS or token.lower_ in TIME_WORDS:
        return False
    capitalised = token.doc.user_data.get("polyg_capitalised")
    if capitalised is None:
        capitalised = token.doc.user_data["polyg_capitalised"] = frozenset(
            t.lower_ for t in token.doc if t.is_alpha and t.text[:1].isupper() and not t.is_sent_start
        )
    if token.lower_ in capitalised:
        return True
    return token.dep_ in ("nsubj", "nsubjpass") and not (
        word_prior.common_word(token.lower_) or word_prior.common_word(token.lemma_.lower())
    )


# Lower-case words inside a proper name ("Bank of America", "Leonardo da Vinci").
_NAME_CONNECTORS = frozenset(
    "of the and for de du da di del della do dos das van von der den ter la le y on upon at".split()
)
_GENERIC_ADJECTIVES = frozenset(
    "new old big small same other main current previous next whole entire first last own single only "
    "slow fast broken bad good shared whole several many internal external public private legacy "
    "entire huge tiny large".split()
)


def _name_tokens(head: Token) -> list[Token]:
    """The head and the words before it that are part of the name: compounds, proper-noun
    modifiers, the named-entity span it ends (articles and possessives left out)."""
    keep = {head.i}
    stack = [head]
    while stack:
        current = stack.pop()
        for child in current.lefts:
            if (
                child.dep_ in ("compound", "flat", "nmod")
                or (child.dep_ == "amod" and (child.pos_ == "PROPN" or child.text[:1].isupper()))
                or (
                    child.dep_ == "amod"
                    and current.lemma_.lower() in COMMON_NAME_HEADS
                    and child.lower_ not in _GENERIC_ADJECTIVES
                    and (child.pos_ == "ADJ" or _purpose(child, current))
                )
                or (child.dep_ == "poss" and child.pos_ == "PROPN" and current.text[:1].isupper())
            ):
                if child.ent_type_ in _NOT_IN_NAMES or child.lower_ in TIME_WORDS:
                    continue
                keep.add(child.i)
                stack.append(child)
    # The named-entity span around the head ("Bank of America", "J.K. Rowling").
    if head.ent_type_ and head.ent_type_ not in _NOT_NAMES:
        start = head.i
        while start > 0 and head.doc[start].ent_iob_ == "I":
            start -= 1
        keep.update(range(start, head.i + 1))
    if (
        head.pos_ == "NOUN"
        and head.text == head.lower_
        and head.lemma_.lower() not in NAME_HEADS
        and any(_proper(head.doc[i]) for i in keep if i != head.i)
    ):
        # "the Northwind deal", "the API keys": the name is the proper part, if it is one.
        keep.discard(head.i)
        modifiers = sorted(keep)
        if modifiers[-1] != head.i - 1 or all(head.doc[i].text.isupper() and len(head.doc[i]) <= 4 for i in keep):
            return []
    doc = head.doc
    start, end = min(keep), max(keep)
    tokens = [doc[i] for i in range(start, end + 1)]
    while tokens and (tokens[0].dep_ in ("det", "case") or tokens[0].is_punct or tokens[0].pos_ in ("DET", "PRON")):
        tokens.pop(0)
    while tokens and (tokens[-1].tag_ == "POS" or tokens[-1].is_punct):
        tokens.pop()
    return tokens


def _wordlike(token: Token) -> bool:
    if token.text in ("-", "–") and token.i > 0 and not token.nbor(-1).whitespace_ and not token.whitespace_:
        return True  # a hyphen inside a word the tokenizer split ("cold-chain")
    if token.like_url or token.like_email or (token.like_num and not token.text[:1].isalpha()):
        return token.like_num and token.i > 0 and token.nbor(-1).pos_ == "PROPN"  # "Windows 11"
    return bool(re.fullmatch(r"[^\W\d_][\w.&'’-]*|&", token.text)) and "_" not in token.text


def _type(tokens: list[Token], head: Token) -> str | None:
    lemma = head.lemma_.lower()
    for heads, kind in (
        (TEAM_HEADS, "Team"),
        (SERVICE_HEADS, "Service"),
        (PROJECT_HEADS, "Project"),
        (ORG_HEADS, "Organisation"),
        (EVENT_HEADS, "Event"),
        (PLACE_HEADS, "Place"),
    ):
        if lemma in heads and (len(tokens) > 1 or head.pos_ == "NOUN"):
            return kind
    label = next((t.ent_type_ for t in reversed(tokens) if t.ent_type_), "")
    ner_kind = _NER_TYPES.get(label)
    if ner_kind == "Event" and _acts_as_person(head, tokens):
        return "Person"
    if ner_kind is None and head.dep_ == "dobj" and head.head.lemma_.lower() in ("visit", "tour"):
        return "Place"  # "visited Zanzibar"
    if ner_kind in (None, "Organisation", "Place") and _acts_as_person(head, tokens):
        return "Person"
    return ner_kind


def _acts_as_person(head: Token, tokens: list[Token]) -> bool:
    """A short proper name doing what people do ("Carol replaced Dave", "Dave is the manager")."""
    if len(tokens) > 3 or not all(t.pos_ == "PROPN" or _proper(t) for t in tokens):
        return False
    verb = head.head
    dep = head.dep_
    while dep == "conj" and verb.dep_ in ("nsubj", "nsubjpass", "dobj", "conj"):
        # "Sven and Petra repainted": the list's place in the sentence.
        dep, verb = verb.dep_, verb.head
    if dep == "nsubj" and verb.lemma_.lower() in PERSON_VERBS and verb.pos_ == "VERB":
        return True
    if dep == "dobj" and verb.lemma_.lower() in ("replace", "hire", "promote", "meet", "call", "email", "marry"):
        return True
    if dep == "nsubj" and verb.lemma_ == "be":
        attr = next((c for c in verb.children if c.dep_ == "attr"), None)
        return attr is not None and attr.lemma_.lower() in LEAD_ROLES | JOB_NOUNS | {"owner", "maintainer"}
    return False


def _text(tokens: Iterable[Token]) -> str:
    toks = list(tokens)
    if not toks:
        return ""
    return "".join(t.text_with_ws for t in toks[:-1]) + toks[-1].text


# --- arguments ------------------------------------------------------------------------------


def _arguments(token: Token, memory: _Memory, system: bool = False) -> list[str]:
    """The names a verb's argument stands for: its name (a pronoun: the speaker or the person it
    stands for), and those of its conjuncts ("A and B")."""
    out: list[str] = []
    for t in [token, *_conjuncts(token)]:
        name = _argument(t, memory, system)
        if name is not None:
            out.append(name)
    return out


def _conjuncts(token: Token) -> list[Token]:
    """The other members of a list `token` opens: "A, B and C" (the parser makes some of
    them appositions)."""
    out: list[Token] = []
    stack = [token]
    while stack:
        current = stack.pop()
        for child in current.children:
            if child.dep_ in ("conj", "appos") and child.pos_ in ("PROPN", "NOUN", "PRON") and child.i > token.i:
                out.append(child)
                stack.append(child)
    return sorted(out, key=lambda t: t.i)


def _argument(token: Token, memory: _Memory, system: bool = False) -> str | None:
    """The name an argument stands for (`_named_argument`), as the graph spells it."""
    name = _named_argument(token, memory, system)
    if name is None:
        return None
    canonical = _canon(memory, name, memory.pending.get(name))
    if canonical != name and name in memory.pending:
        memory.pending[canonical] = memory.pending.pop(name)
    return canonical


def _named_argument(token: Token, memory: _Memory, system: bool = False) -> str | None:
    """The name an argument stands for; `system`: the subject of a predicate only systems have
    ("the ledger depends on X"), which a common noun with its article names."""
    lower = token.lower_
    code = next((name for (start, end), name in memory.codes.items() if start <= token.idx < end), None)
    if code is not None:
        return code  # "works on billing-api-3"
    if lower in _SPEAKER or (lower in _WE and token.dep_ in ("nsubj", "nsubjpass")):
        # "We moved to Bristol": the speaker is one of "we" (only a person's fact keeps it:
        # `_facts`).
        return memory.speaker
    if lower in _PERSON_PRONOUNS:
        if len(set(memory.people)) == 1:
            return memory.people[-1]
        # A subject "he"/"she" continues the sentence before's subject when that was a person
        # ("Teodor reports to Camila. He manages ...").
        if token.dep_ in ("nsubj", "nsubjpass") and memory.previous_subject in memory.people:
            return memory.previous_subject
        return None
    if token.pos_ == "PRON":
        return None
    named_by = next((c for c in token.children if c.dep_ == "appos" and c.pos_ == "PROPN"), None)
    if token.pos_ == "NOUN" and named_by is not None:
        return _named_argument(named_by, memory, system)  # "the managing partner, Conrad Vale"
    head = _name_head(token) or (token if token.pos_ in ("NOUN", "PROPN") else None)
    if head is None:
        return None
    named = _name(head)
    if named is not None:
        memory.pending[named[0]] = named[1]
        return named[0]
    # A common noun argument of a fact verb: a compound ("the fraud model"), a system named by
    # its kind ("the scheduler"), or a bare noun ("likes pizza"); not "my sister", "the beach".
    tokens = _name_tokens(head)
    if not tokens or any(not _wordlike(t) or t.lower_ in TIME_WORDS for t in tokens) or len(tokens) > 3:
        return None
    if not all(t.pos_ in ("NOUN", "PROPN", "ADJ") for t in tokens) or tokens[-1].pos_ == "ADJ":
        return None
    if any(c.dep_ in ("nummod", "quantmod") for c in head.children) or (len(tokens) == 1 and head.tag_ == "NNS"):
        return None  # "owns two restaurants": things counted, not one named thing
    determined = any(c.dep_ in ("det", "poss") for c in head.children)
    if len(tokens) == 1 and determined and head.lemma_.lower() not in SERVICE_HEADS and not system:
        return None
    name = _text(tokens)
    if len(name) < 2:
        return None
    memory.pending[name] = "Service" if head.lemma_.lower() in SERVICE_HEADS else None
    return name


# --- facts ----------------------------------------------------------------------------------


# Edges that open another clause: a time hanging in one says nothing of the other's facts.
_CLAUSE_EDGES = frozenset({"conj", "relcl", "advcl", "acl", "parataxis"})


def _attached_offsets(sentence: Span, verb: Token) -> set[int]:
    """Where the words start whose clause is the verb's (`_same_clause`): the time expressions
    among them are the ones the parse attaches to the verb or to the verb its clause hangs on
    ("started to work on X in 2024"), not to a clause conjoined to it or relative to it."""
    out: set[int] = set()
    for token in sentence:
        governing = _verb_above(token)
        if governing is None or _same_clause(governing, verb):
            out.add(token.idx)
    return out


def _verb_above(token: Token) -> Token | None:
    """The first verb at or above `token` in the parse (None: none up to the root)."""
    current = token
    while current.pos_ not in ("VERB", "AUX"):
        if current.head.i == current.i:
            return None
        current = current.head
    return current


def _same_clause(a: Token, b: Token) -> bool:
    """Whether no clause boundary (`_CLAUSE_EDGES`) lies on the parse's path between two words."""
    above_a = [a, *a.ancestors]
    above_b = {t.i for t in [b, *b.ancestors]}
    common = next((t for t in above_a if t.i in above_b), None)
    if common is None:
        return False
    for start in (a, b):
        current = start
        while current.i != common.i:
            if current.dep_ in _CLAUSE_EDGES:
                return False
            current = current.head
    return True


def _clause_offsets(verb: Token) -> set[int]:
    """Where the words of the verb's own clause start: its subtree without the clauses
    conjoined to it."""
    other = {i for c in verb.children if c.dep_ == "conj" and c.pos_ in ("VERB", "AUX") for i in _subtree_ids(c)}
    return {t.idx for t in verb.subtree if t.i not in other}


def _facts(sentence: Span, memory: _Memory) -> Iterator[tuple[ExtractedFact, Token]]:
    for verb in sentence:
        if verb.pos_ not in ("VERB", "AUX"):
            continue
        # "no longer works on X", "doesn't live in Y anymore": what the verb states has ended;
        # any other negation states nothing.
        ended = _no_longer(verb)
        if _negated(verb) and not ended:
            continue
        subjects = _subjects(verb)
        if not subjects:
            continue
        stated = [(p, s, o, ended) for p, s, o in _relations(verb, subjects)]
        if not ended:
            stated += [(p, s, o, True) for p, s, o in _endings(verb, subjects)]
        for predicate, subj_token, objects, ends in stated:
            for subject in _arguments(subj_token, memory, system=predicate in ("depends_on", "runs_on")):
                for obj_token in objects:
                    for obj in _arguments(obj_token, memory):
                        if subject.lower() == obj.lower():
                            continue
                        kind = memory.entities.get(obj.lower())
                        kind_of = kind.type if kind else memory.pending.get(obj)
                        mover = memory.entities.get(subject.lower())
                        system = mover is not None and mover.type in ("Service", "Code", "Product")
                        if predicate == "runs_on?":
                            if not system:
                                continue  # "the mobile team migrated to Flutter", "Quentin transferred to Lyon"
                            predicate = "runs_on"  # "the billing service moved to Kubernetes": where it runs
                        elif (
                            verb.lemma_.lower() in ("move", "relocate", "migrate")
                            and mover is not None
                            and mover.type in ("Service", "Project", "Code", "Product")
                        ):
                            continue  # "the billing service moved to Kubernetes": a migration, no job
                        if _moves_home(verb, subj_token, obj_token, kind_of, mover) or _household_move(
                            verb, subj_token, obj_token, kind_of, mover
                        ):
                            kind_of = "Place"  # "She moved to Hilo": a person moves to a place
                        if predicate == "studies_at?":
                            # Going to, starting at or attending a school; anywhere else it is
                            # a trip, a job or a meeting.
                            canonical = "studies_at" if obj.split()[-1].lower() in SCHOOL_HEADS else None
                        else:
                            canonical = _canonical(predicate, kind_of, verb)
                        if canonical is None:
                            continue
                        for name in (subject, obj):
                            if name.lower() not in memory.entities and name in memory.pending:
                                _add_entity(memory, name, memory.pending[name])
                        if subj_token.lower_ in _WE and canonical not in _WE_PREDICATES:
                            continue  # "we use Kafka" is the team's, not the speaker's alone
                        _retype(memory, subject, SUBJECT_TYPES.get(canonical))
                        _retype(memory, obj, OBJECT_TYPES.get(canonical))
                        yield ExtractedFact(subject, canonical, obj, ends=ends), verb


def _moves_home(verb: Token, subj: Token, obj: Token, kind: str | None, subject: ExtractedEntity | None) -> bool:
    """A person moving to a proper name the tagger did not type, or typed a person: a place
    ("She moved to Hilo"); a system moved to one is a migration, not a home. A one-word name
    the tagger calls a place is a town even when the rules typed it an organisation, unless
    "we" move (a team moves to a platform). One the tagger calls a company stays a job
    ("Sam moved to Google"), though the small model reads some unfamiliar towns so
    ("moved to Stellenbosch"): a wrong job is as wrong as a wrong home, and moving to a
    company is said as often."""
    if verb.lemma_.lower() not in ("move", "relocate") or obj.pos_ != "PROPN":
        return False
    if subject is None:
        return False
    if subject.type == "Person" and kind in (None, "Person") and obj.ent_type_ in ("", "PERSON"):
        return True
    # A one-word subject the tagger typed a place or a company is as often a person's name
    # ("Oluwaseun moved to Accra"); whatever it is, moving to a town is where it lives now.
    return (
        subject.type in ("Person", "Place", "Organisation", None)
        and kind == "Organisation"
        and subj.lower_ not in _WE
        and obj.ent_type_ in ("GPE", "LOC", "FAC")
        and obj.ent_iob_ == "B"
        and (obj.i + 1 >= len(obj.doc) or obj.doc[obj.i + 1].ent_iob_ != "I")
        and not any(c.dep_ in ("compound", "amod") for c in obj.children)
        and obj.lower_ not in NAME_HEADS
    )


# Who a household is: those moving with whom a move is a home's ("my wife and I moved to ...").
_HOUSEHOLD = frozenset(
    "wife husband partner spouse fiance fiancee girlfriend boyfriend kid kids child children son daughter "
    "family parent parents mum mom dad mother father baby".split()
)
# What a job is called when a move is made for one ("because Sam got a job at the university").
_JOB_NOUNS = frozenset("job position post offer placement".split())


def _household_move(verb: Token, subj: Token, obj: Token, kind: str | None, subject: ExtractedEntity | None) -> bool:
    """A move the sentence itself says is a home's, whatever the tagger made of the name moved
    to (the small model reads unfamiliar towns as companies, "moved to Bristol"): the house
    moved ("we moved house to ..."), a household moving together ("my wife and I", "with the
    kids"), or a move made for a job ("because Sam got a job at the university": one moves to
    a town for a job, not to the job). A system's move stays a migration, a team's or a named
    product's stays none ("we moved to a new cluster" says none of this)."""
    if verb.lemma_.lower() not in ("move", "relocate") or obj.pos_ != "PROPN":
        return False
    if subject is not None and subject.type not in ("Person", None):
        return False
    # The tagger reads some towns as people too ("moved to Tampere"); a product is none.
    if kind not in (None, "Organisation", "Place", "Person") or obj.ent_type_ in ("PRODUCT", "WORK_OF_ART"):
        return False
    if any(c.dep_ in ("dobj", "advmod", "npadvmod") and c.lower_ in ("house", "home") for c in verb.children):
        return True
    movers = [subj, *_conjuncts(subj)]
    with_whom = [t for p in verb.children if p.dep_ == "prep" and p.lower_ == "with" for t in p.children]
    if any(t.lemma_.lower() in _HOUSEHOLD for t in [*movers, *with_whom]):
        return True
    reasons = [c for c in verb.children if c.dep_ == "advcl" and any(m.lower_ == "because" for m in c.children)]
    return any(t.lemma_.lower() in _JOB_NOUNS and t.pos_ == "NOUN" for r in reasons for t in r.subtree)


# What "we" states of the speaker too: where one lives (a household moves together).
_WE_PREDICATES = frozenset({"lives_in"})


# What a predicate says of its arguments' types, where the tagger had none or read a system's
# name as a company's ("depends on Postgres").
SUBJECT_TYPES = {
    "leads": "Person",
    "works_on": "Person",
    "works_at": "Person",
    "member_of": "Person",
    "lives_in": "Person",
    "reports_to": "Person",
    "married_to": "Person",
    "studies_at": "Person",
    "depends_on": "Service",
    "runs_on": "Service",
}
OBJECT_TYPES = {
    "maintains": "Service",
    "member_of": "Team",
    "depends_on": "Service",
    "uses": "Service",
    "runs_on": "Service",
    "lives_in": "Place",
    "works_at": "Organisation",
    "reports_to": "Person",
    "married_to": "Person",
    "studies_at": "Organisation",
}


def _retype(memory: _Memory, name: str, kind: str | None) -> None:
    name = _canon(memory, name, kind)
    held = memory.entities.get(name.lower())
    if kind is None or held is None or held.type == kind:
        return
    overridable = {
        # The small model often reads an unfamiliar first name as a place or an organisation.
        "Person": (None, "Organisation", "Place", "Event"),
        "Service": (None, "Organisation", "Place", "Product", "Person"),
        "Place": (None, "Organisation", "Person"),
        # A company one works at or quits is no person, whatever the tagger read.
        "Organisation": (None, "Place", "Product", "Work", "Event", "Person", "Service"),
        "Team": (None,),
    }.get(kind, (None, "Place", "Product"))
    if held.type in overridable:
        if kind == "Person" and len(name.split()) > 2:
            return
        memory.entities[name.lower()] = ExtractedEntity(held.name, kind)
        if kind == "Person" and name != memory.speaker and name not in memory.people:
            memory.people.append(name)


def _subjects(verb: Token) -> list[Token]:
    """The verb's subject; a conjoined verb without one shares its first verb's ("joined Acme
    and moved to Berlin")."""
    own = [c for c in verb.children if c.dep_ in ("nsubj", "nsubjpass")]
    if own:
        return own
    misread = next((c for c in verb.lefts if c.dep_ in ("advmod", "npadvmod") and c.i == c.sent.start), None)
    if misread is not None and verb.dep_ == "ROOT" and misread.ent_type_ in ("PERSON", "ORG", "GPE", "NORP"):
        # "Odile replaced Bastien ...": an unfamiliar name opening the sentence, parsed as an
        # adverb of its verb, is the verb's subject (the tagger still names it).
        return [misread]
    if verb.dep_ == "conj" and verb.head.pos_ in ("VERB", "AUX"):
        return _subjects(verb.head)
    if verb.dep_ in ("xcomp",) and verb.head.pos_ in ("VERB", "AUX"):
        return _subjects(verb.head)  # "started to work on X"
    return []


def _relations(verb: Token, subjects: list[Token]) -> Iterator[tuple[str | None, Token, list[Token]]]:
    """(predicate, subject token, object tokens) the verb states; predicate None: by the
    object's type (`_canonical`)."""
    lemma = verb.lemma_.lower()
    subject = subjects[0]
    passive = subject.dep_ == "nsubjpass" or any(c.dep_ == "auxpass" for c in verb.children)
    moved = _migrated(verb, subject, passive)
    if moved is not None and (target := _prep_object(verb, "to")) is not None:
        yield "runs_on?", moved, [target]  # "the payroll service was migrated to Boreal"
    if passive:
        agent = _prep_object(verb, "by", dep="agent")
        if agent is not None and lemma in PASSIVE_VERBS:
            yield PASSIVE_VERBS[lemma], agent, [subject]
            return
        if lemma in APPOINT_VERBS:
            yield from _appointed(verb, subject)
            return
        for (verb_lemma, prep), predicate in PREP_VERBS.items():
            if verb_lemma == lemma and (obj := _prep_object(verb, prep)) is not None:
                yield predicate, subject, [obj]
                return
        return
    if lemma in ("be", "become"):
        yield from _copular(verb, subject)
        return
    if lemma in SUCCEED_VERBS:
        role = _prep_object(verb, "as")
        if role is not None:
            yield from _role(role, subject)
        return
    particles = {c.lower_ for c in verb.children if c.dep_ in ("prt", "advmod")}
    if lemma == "take" and "over" in particles:
        obj = next((c for c in verb.children if c.dep_ == "dobj"), None)
        role = _prep_object(verb, "as")
        if role is not None:
            yield from _role(role, subject)  # "took over as head of Sales"
        elif obj is not None:
            yield "leads", subject, [obj]  # "took over the documentation team"
        return
    if lemma in LEAVE_VERBS or lemma in LEAVE_FROM_VERBS or (lemma == "step" and "down" in particles):
        return  # what they end: `_endings`
    lemmas = _lemmas(verb)
    for (verb_lemma, prep), predicate in PREP_VERBS.items():
        if verb_lemma not in lemmas:
            continue
        obj = _prep_object(verb, prep)
        if obj is None and prep in ("at", "for", "on") and (role := _prep_object(verb, "as")) is not None:
            obj = _prep_object(role, prep)  # "works as a midwife at Lakeside Clinic"
        if obj is not None:
            if lemma in ("move", "relocate", "transfer", "switch") and any(
                c.dep_ == "dobj" and c.lower_ not in ("house", "home") for c in verb.children
            ):
                continue  # "moved billing-api to Postgres": a migration, not a move ("moved house" is one)
            if predicate == "runs_on" and any(c.dep_ == "dobj" for c in verb.children):
                continue  # "I run a bakery on Dock Road": where it is run, not what runs on what
            yield predicate, subject, [obj]
            return
    if lemma == "move" and any(c.dep_ == "prt" and c.lower_ == "in" for c in verb.children):
        # "moved in with my partner in Leuven": the place, wherever the parse hung it.
        place = next(
            (
                t
                for t in verb.subtree
                if t.dep_ == "pobj" and t.ent_type_ in ("GPE", "LOC") and t.head.lower_ in ("in", "to")
            ),
            None,
        )
        if place is not None:
            yield "lives_in", subject, [place]
            return
    if lemma in OBJECT_VERBS:
        obj = next((c for c in verb.children if c.dep_ in ("dobj", "attr")), None)
        if lemma == "join" and obj is not None and _prep_object(verb, "as") is not None:
            # "joined Corbel Tide Shipping as fleet manager": a job there, unless a team's
            # (whatever the tagger made of the name).
            yield "joined_as?", subject, [obj]
            return
        if obj is not None:
            yield OBJECT_VERBS[lemma], subject, [obj]
    return


# Verbs whose passive puts the subject in a role or a body: "was promoted to head of Sales",
# "was appointed as chair of X", "was elected to the City Council".
APPOINT_VERBS = frozenset("promote appoint elect name nominate make".split())


def _appointed(verb: Token, subject: Token) -> Iterator[tuple[str | None, Token, list[Token]]]:
    """The role or the body a passive appointment states (`APPOINT_VERBS`)."""
    named = next((c for c in verb.children if c.dep_ in ("oprd", "attr") and c.pos_ == "NOUN"), None)
    if named is not None and (named.lemma_.lower() in LEAD_ROLES or _headed(named)):
        yield from _role(named, subject)  # "was appointed chair of the Finance Committee"
        return
    for prep in ("to", "as"):
        target = _prep_object(verb, prep)
        if target is None:
            continue
        if target.lemma_.lower() in LEAD_ROLES or _headed(target):
            yield from _role(target, subject)
        elif prep == "to" and target.pos_ in ("PROPN", "NOUN"):
            yield "sits_on?", subject, [target]  # elected to a council, appointed to a board
        return
    # "was promoted to head the Logistics team", parsed as "to" + the verb "head".
    led = next((c for c in verb.children if c.dep_ == "xcomp" and c.lemma_.lower() in ("head", "lead")), None)
    if led is not None:
        target = _prep_object(led, "of") or next((c for c in led.children if c.dep_ == "dobj"), None)
        if target is not None:
            yield "leads", subject, [target]


def _lemmas(verb: Token) -> set[str]:
    """The verb's lemma, and for a third-person form the word without its "s" (the lemmatizer
    reads "rides" as "rid")."""
    out = {verb.lemma_.lower()}
    if verb.tag_ == "VBZ" and verb.lower_.endswith("s"):
        out.add(verb.lower_[:-1])
    return out


# Verbs that end what their object was to the subject: one leaves a team, a company, a project.
LEAVE_VERBS = frozenset("leave quit exit".split())
# Verbs that end it through "from": "resigned from Acme", "retired from the board".
LEAVE_FROM_VERBS = frozenset("resign retire withdraw depart".split())
# Verbs of a succession: "X replaced / succeeded Y as the lead of W".
SUCCEED_VERBS = frozenset("replace succeed".split())


def _endings(verb: Token, subjects: list[Token]) -> Iterator[tuple[str | None, Token, list[Token]]]:
    """(predicate, subject token, object tokens) of the facts the verb says have ended: "X left
    Y" (X's membership, employment or work on Y), "X resigned from Y", "X stepped down as lead
    of Y", "X replaced Y as lead of W" (Y's role), "X took over W from Y" (Y's lead of W).
    Predicate None: by the object's type, as for "joined" (`_canonical`)."""
    lemma = verb.lemma_.lower()
    subject = subjects[0]
    passive = subject.dep_ == "nsubjpass" or any(c.dep_ == "auxpass" for c in verb.children)
    moved = _migrated(verb, subject, passive)
    if moved is not None and (source := _prep_object(verb, "from")) is not None:
        yield "runs_on?", moved, [source]  # "... migrated from Atlas": it ran there until then
    if passive:
        return
    particles = {c.lower_ for c in verb.children if c.dep_ in ("prt", "advmod")}
    obj = next((c for c in verb.children if c.dep_ == "dobj"), None)
    if lemma in LEAVE_VERBS and obj is not None:
        yield "left?", subject, [obj]
    elif lemma in LEAVE_FROM_VERBS and (source := _prep_object(verb, "from")) is not None:
        yield "left?", subject, [source]
    if (lemma in LEAVE_FROM_VERBS or (lemma == "step" and "down" in particles)) and (
        role := _prep_object(verb, "as")
    ) is not None:
        yield from _role(role, subject)  # "stepped down as head of Sales"
    if lemma in SUCCEED_VERBS and obj is not None and (role := _prep_object(verb, "as")) is not None:
        yield from _role(role, obj)  # the one replaced held the role until then
    if lemma == "take" and "over" in particles and obj is not None:
        previous = _prep_object(verb, "from")
        if previous is not None:
            yield "leads", previous, [obj]


# Verbs that move a system to another platform: "was migrated from Atlas to Boreal".
MIGRATE_VERBS = frozenset("migrate move port transfer".split())


def _migrated(verb: Token, subject: Token, passive: bool) -> Token | None:
    """What a migration moves (the passive subject, the object, or the subject that moved);
    whether it is a system is read from its type (`_canonical`, "runs_on?")."""
    if verb.lemma_.lower() not in MIGRATE_VERBS:
        return None
    obj = next((c for c in verb.children if c.dep_ == "dobj"), None)
    return subject if passive or obj is None else obj


def _copular(verb: Token, subject: Token) -> Iterator[tuple[str | None, Token, list[Token]]]:
    attr = next((c for c in verb.children if c.dep_ in ("attr", "acomp")), None)
    if attr is None:
        # "X is on the Search team", "X is part of Y" (parsed as a preposition of "is").
        obj = _prep_object(verb, "on") or _prep_object(verb, "in")
        if obj is not None and obj.lemma_.lower() in TEAM_HEADS:
            yield "member_of", subject, [obj]
        return
    lemma = attr.lemma_.lower()
    if lemma in ("part", "member") and (obj := _prep_object(attr, "of")) is not None:
        yield ("part_of" if lemma == "part" else "member_of"), subject, [obj]
        return
    if lemma in ("base", "locate", "married") or attr.dep_ == "acomp":
        for (verb_lemma, prep), predicate in PREP_VERBS.items():
            if verb_lemma == attr.lemma_.lower() and (obj := _prep_object(attr, prep)) is not None:
                yield predicate, subject, [obj]
        if attr.lower_ == "married" and (obj := _prep_object(attr, "to")) is not None:
            yield "married_to", subject, [obj]
        return
    # "Dana is Bob's manager", "My manager is Dana", "The lead of X is Y".
    if lemma in LEAD_ROLES | {"owner", "maintainer"} or _headed(attr):
        if _role_target(attr) is not None:
            yield from _role(attr, subject)
            return
        # "the operations director at Corbel Tide Shipping": a job there (what it leads unsaid).
        if (obj := _prep_object(attr, "at") or _prep_object(verb, "at")) is not None:
            yield "job_at?", subject, [obj]
        return
    if subject.lemma_.lower() in LEAD_ROLES and attr.pos_ in ("PROPN", "NOUN"):
        yield from _role(subject, attr)
        return
    if lemma in JOB_NOUNS:
        for prep in ("at", "for", "on", "in"):
            if (obj := _prep_object(attr, prep)) is not None:
                yield ("studies_at?" if lemma in _PUPILS else None), subject, [obj]
                return
        return
    if _member_role(attr) and _person(subject) and (group := _prep_object(attr, "of")) is not None:
        yield "member_of?", subject, [group]  # "Sofia is the drummer of The Paper Kites"
        return
    if attr.pos_ == "NOUN" and attr.tag_ == "NN":
        # Any other occupation at a company or in a team ("a partner at Hollis & Crane", "a
        # postdoc at the Kessler Institute"): by what it is at (`_canonical`).
        for prep in ("at", "for", "with"):
            # The parser hangs "at X" on the noun or on "is".
            if (obj := _prep_object(attr, prep) or _prep_object(verb, prep)) is not None:
                yield "job_at?", subject, [obj]
                return


def _headed(role: Token) -> bool:
    """A role a "head", "chief" or "lead" modifier makes a leader's ("head chef", "chief
    editor", "lead engineer")."""
    return role.pos_ == "NOUN" and any(
        c.dep_ in ("compound", "amod") and c.lower_ in ("head", "chief", "lead") for c in role.children
    )


def _role(role: Token, holder: Token) -> Iterator[tuple[str | None, Token, list[Token]]]:
    """A role noun ("tech lead", "manager", "owner") and who holds it: the fact it states about
    what it is the role of ("of Y", "Y's")."""
    lemma = role.lemma_.lower()
    target = _role_target(role)
    if target is None:
        return
    if lemma == "owner":
        yield "owns", holder, [target]
    elif lemma == "maintainer":
        yield "maintains", holder, [target]
    elif lemma in LEAD_ROLES or _headed(role):
        if (
            target.pos_ in ("PROPN", "PRON")
            and target.ent_type_ in ("PERSON", "")
            and target.lemma_.lower() not in (NAME_HEADS)
        ):
            if _person(target):
                # "Dana is my manager": I report to Dana.
                yield "reports_to", target, [holder]
                return
        yield "leads", holder, [target]
    elif lemma in JOB_NOUNS:
        yield None, holder, [target]
    elif _member_role(role) and _person(holder) and (group := _prep_object(role, "of")) is not None:
        yield "member_of?", holder, [group]  # "as drummer of the band": a member, if a group's


# A person's place in a group ("drummer", "treasurer", "guitarist", "goalkeeper", "librarian"):
# the endings English makes such nouns with. Only read where the sentence gives the noun a holder
# and a group ("X is the N of Y", "X replaced Y as N of Y"), so "the author of the report" stays
# out by what the report is, not by its noun.
_MEMBER_ENDINGS = ("er", "or", "ist", "ian", "ant", "ent", "man", "woman", "keeper", "ary")


def _member_role(role: Token) -> bool:
    return role.pos_ == "NOUN" and role.lemma_.lower().endswith(_MEMBER_ENDINGS)


def _person(token: Token) -> bool:
    """A token the tagger calls a person, or a personal pronoun."""
    return token.ent_type_ == "PERSON" or token.lower_ in _SPEAKER | _PERSON_PRONOUNS


def _role_target(role: Token) -> Token | None:
    """What a role is the role of: "of Y", "for Y", "Y's"."""
    of = _prep_object(role, "of") or _prep_object(role, "for")
    return of or next((c for c in role.children if c.dep_ == "poss"), None)


def _prep_object(head: Token, prep: str, dep: str = "prep") -> Token | None:
    for child in head.children:
        if child.dep_ in (dep, "prep", "agent") and child.lower_ == prep:
            obj = next((c for c in child.children if c.dep_ == "pobj"), None)
            if obj is not None:
                return obj
    return None


# Verbs that mean leading only when their object is a group or an undertaking.
_LEADS_ONLY_GROUPS = frozenset("run take supervise oversee chair coordinate captain coach conduct direct".split())


def _canonical(predicate: str | None, object_type: str | None, verb: Token) -> str | None:
    """The predicate stored: a verb that can mean several things reads its object's type
    (joining or working on a team is membership, joining a company is working there)."""
    lemma = verb.lemma_.lower()
    if (
        lemma in _LEADS_ONLY_GROUPS
        and predicate == "leads"
        and object_type not in ("Team", "Organisation", "Project", "Service")
    ):
        return None  # "ran the marathon", "coordinated the logistics", "took over the cooking"
    if lemma in ("move", "relocate", "transfer", "switch") and object_type in (None, "Person", "Event", "Code"):
        return None  # "switched to the new VPN": no place, team or employer
    if lemma == "switch" and object_type not in ("Team", "Organisation", "Project"):
        return None
    if predicate == "joined_as?":
        return "member_of" if object_type == "Team" else "works_at"
    if predicate == "member_of?":  # a role in a group; of anything else, no membership
        return "member_of" if object_type in ("Team", "Organisation") else None
    if predicate == "sits_on?":  # "sits on the Parks Committee", "served on the board"
        return "member_of" if object_type in ("Team", "Organisation") else None
    if predicate == "job_at?":
        # A job at a named place of work, whatever the tagger made of its name ("the head
        # librarian at Westbrook Library"); a person or a happening is no employer.
        if object_type in ("Person", "Event", "Code"):
            return None
        return "member_of" if object_type == "Team" else "works_at"
    if predicate == "left?":
        # What one leaves: a team's membership, a company's job, a project; a person or a
        # place is no such thing ("left Tom", "left Berlin on Friday" is a trip).
        if object_type in ("Place", "Person") and lemma != "leave":
            return "works_at"  # "quit Skyline Aero", "resigned from Globex": a company the tagger misread
        if object_type in ("Place", "Event", "Code", "Person"):
            return None
        return {"Team": "member_of", "Organisation": "works_at", "Product": "works_at"}.get(
            object_type or "", "works_on" if object_type in ("Project", "Service") else "member_of"
        )
    if predicate == "works_at?":  # "works at/for X": a team's member, a project's worker, else employed
        return {"Team": "member_of", "Service": "works_on", "Project": "works_on"}.get(object_type or "", "works_at")
    if predicate == "works_on?":  # "works on X": a team's member, else working on it
        return "member_of" if object_type == "Team" else "works_on"
    if predicate is not None:
        if predicate in ("lives_in", "based_in") and object_type == "Team":
            return "member_of"
        return predicate
    if object_type == "Team":
        return "member_of"
    if object_type == "Organisation" or (lemma == "join" and object_type == "Product"):
        return "works_at"  # one joins a company; a "product" joined is one the tagger misread
    if object_type == "Place":
        return "lives_in" if lemma in ("move", "relocate") else "based_in"
    if lemma in ("join",) and object_type in (None, "Person"):
        return "member_of"
    return "works_on"


def _no_longer(verb: Token) -> bool:
    """ "no longer works on", "doesn't live in Oslo anymore", "not ... any longer": the verb's
    fact held and has ended."""
    for c in verb.children:
        if c.lower_ == "longer" and c.i > 0 and c.nbor(-1).lower_ in ("no", "any"):
            return True
        if c.lower_ in ("anymore", "anylonger") or (c.lower_ == "more" and c.i > 0 and c.nbor(-1).lower_ == "any"):
            return True
    return False


def _negated(verb: Token) -> bool:
    if any(c.dep_ == "neg" or c.lower_ in _NEG for c in verb.children):
        return True
    # "no longer works on", "never joined"
    return any(c.lower_ == "longer" and c.nbor(-1).lower_ == "no" for c in verb.children if c.i > 0)


# --- times ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Time:
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    event_at: datetime | None = None
    text: str = ""


_SPAN_START = frozenset({"since", "from", "starting", "as of", "effective"})
_SPAN_END = frozenset({"until", "till", "to", "through", "thru"})
_NOT_POINTS = frozenset({"for", "every", "each", "per"})
_CLOCK = re.compile(r"\d{1,2}(?::\d{2})?\s*(?:am|pm)\b|\b\d{1,2}:\d{2}\b|\bnoon\b|\bmidnight\b", re.IGNORECASE)
# "a week", "six hours", "two years": how long, not when.
_DURATION = re.compile(
    r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|twelve|a few|several|\d+)[- ]"
    r"(?:\w+ )?(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?|decades?)",
    re.IGNORECASE,
)
_AGO = re.compile(r"\bago\b", re.IGNORECASE)
# "year 5", "grade 3", "day 0", "week 2": a numbered stage (of school, a project), not a date.
_NUMBERED_STAGE = re.compile(r"(?:year|grade|day|week|sprint|phase|stage|level|season)\s+\d{1,2}", re.IGNORECASE)
# Main verbs of a state, not of something that happened: its time is no event's.
_STATIVE = frozenset("be have love like seem know own prefer remain stay".split())
_VAGUE = frozenset({"now", "currently", "current", "right now", "at the moment", "these days", "nowadays"})


def _times(sentence: Span, reference: datetime, within: set[int] | None = None) -> _Time:
    """The validity and the time the sentence states: "since X" opens a state, "from X until Y"
    bounds it, "until Y" ends it; any other date (with its time of day) is when it happened.
    `within`: only the time expressions that start at these character offsets (one clause's)."""
    phrases = [(o, t) for at, o, t in _time_phrases(sentence) if within is None or at in within]
    start_of: tuple[str, Interval] | None = None
    end_of: tuple[str, Interval] | None = None
    point: tuple[str, Interval] | None = None
    clock: str | None = None
    for opener, text in phrases:
        if (opener in _NOT_POINTS and not (opener == "for" and _DAY_NAMED.search(text))) or (
            text.lower() in _VAGUE or _DURATION.fullmatch(text.strip()) or _NUMBERED_STAGE.fullmatch(text.strip())
        ):
            continue  # "for two weeks", "every Monday"; "scheduled for next Thursday" is a day
        if _CLOCK.fullmatch(text.strip()):
            clock = text if clock is None else clock
            continue
        if _CLOCK.search(text):
            # "Yesterday at 7pm" as one expression: the instant it names.
            with contextlib.suppress(PolygError, ValueError, OverflowError):
                instant = parse_instant(text, reference=reference)
                point = point or (text, Interval(instant, instant))
                clock = "" if clock is None else clock
                continue
        try:
            span = _season_or_month(text, reference) or parse_range(text, reference=reference)
        except (PolygError, ValueError, OverflowError):
            continue
        if opener in _SPAN_START and start_of is None:
            start_of = (text, span)
        elif opener in _SPAN_END and end_of is None:
            end_of = (text, span)
        elif point is None:
            point = (text, span)
    if start_of is not None or end_of is not None:
        begin = start_of[1].start if start_of else None
        end = end_of[1].end if end_of else None
        if begin is not None and end is not None and end <= begin:
            end = None
        if begin is None and end is not None and end_of is not None and end <= reference:
            # "Until December 2025 Lena led Support", said later: a fact needs a start, and one
            # that starts when it is told would end before it began (the write refuses it).
            # It held at least into the period it ended in.
            begin = end_of[1].start
        return _Time(valid_from=begin, valid_to=end)
    if point is None and clock is None:
        return _Time()
    if point is not None and _CLOCK.search(point[0]):
        clock = ""  # "08:45 today" read as one instant already
    text = " ".join(p for p in (point[0] if point else "", clock or "") if p)
    at: datetime | None = None
    if clock:
        with contextlib.suppress(PolygError, ValueError, OverflowError):
            at = parse_instant(text, reference=reference)
    if at is None and point is not None:
        at = point[1].start
        if _AGO.search(point[0]):
            # "two weeks ago": that day, not the start of that week.
            with contextlib.suppress(PolygError, ValueError, OverflowError):
                exact = parse_instant(point[0], reference=reference)
                at = exact.replace(hour=0, minute=0, second=0, microsecond=0)
    if at is None:
        return _Time()
    if at < reference and _future(sentence):
        at = _ahead(at, text, reference)
    stative = sentence.root.lemma_.lower() in _STATIVE and not _scheduled(sentence.root)
    return _Time(valid_from=at if point else None, event_at=None if stative else at, text=text)


# A time expression that names a day (not a duration): "for next Thursday", "for 3 March".
_DAY_NAMED = re.compile(
    r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|"
    r"\d|\btomorrow\b|\btonight\b|\btoday\b|\bnext\b",
    re.IGNORECASE,
)
_WEEKDAY = re.compile(r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b", re.IGNORECASE)
_PAST_WORDS = re.compile(r"\b(?:last|ago|yesterday|previous|past|earlier)\b|\b\d{4}\b", re.IGNORECASE)
_FUTURE_VERBS = frozenset("schedule plan due set expect book slate".split())


def _future(sentence: Span) -> bool:
    """Whether the sentence tells what will happen: "will / shall / 'll", "is going to", "is
    scheduled for", the present progressive ("we're meeting on Friday") or the present tense
    with "on <day>" or "at <time>" (a date stated in the present is a schedule: "starts on
    Friday")."""
    for t in sentence:
        if t.dep_ == "aux" and t.lower_ in ("will", "shall", "'ll", "wo"):
            return True
        if t.lower_ == "going" and t.i + 1 < len(t.doc) and t.nbor(1).lower_ == "to" and t.tag_ == "VBG":
            return True
        if t.lemma_.lower() in _FUTURE_VERBS and t.tag_ == "VBN":
            return True
    root = sentence.root
    if root.tag_ == "VBG" and any(c.dep_ == "aux" and c.tag_ in ("VBP", "VBZ") for c in root.children):
        return True
    # "The launch is on 3 March", "The hackathon starts on Friday at 10:00".
    return root.tag_ in ("VBZ", "VBP") and _scheduled(root)


def _scheduled(verb: Token) -> bool:
    """ "The premiere is on 14 February", "The call is at 10:00": a state verb whose "on" or "at"
    names a day or a time tells when something happens."""
    for prep in verb.children:
        if prep.dep_ == "prep" and prep.lower_ in ("on", "at"):
            if any(c.dep_ == "pobj" and c.ent_type_ in ("DATE", "TIME") for c in prep.children):
                return True
    return False


def _ahead(at: datetime, text: str, reference: datetime) -> datetime:
    """A time read as the most recent past one, told of what will happen: the next one ("on 3
    March" said in January, "on Friday", "at 22:00"), unless the phrase says it is past."""
    if _PAST_WORDS.search(text):
        return at
    today = reference.replace(hour=0, minute=0, second=0, microsecond=0)
    if _WEEKDAY.search(text):
        step = 7
    elif re.search(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", text, re.IGNORECASE):
        with contextlib.suppress(ValueError):
            ahead = at.replace(year=at.year + 1)
            return ahead if ahead >= today else at
        return at
    elif _CLOCK.search(text):
        step = 1
    else:
        return at
    ahead = at
    while ahead < (reference if step == 1 else today):
        ahead += timedelta(days=step)
    return ahead


_MONTHS = ("january february march april may june july august september october november december").split()
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_QUARTER = re.compile(r"(last|this|next|previous|past)\s+quarter", re.IGNORECASE)
_SEASON_OR_MONTH = re.compile(
    r"(?:(last|this|next|past)\s+)?(" + "|".join([*_MONTHS, *_SEASONS]) + r")(?:\s+(?:of\s+)?(\d{4}))?",
    re.IGNORECASE,
)


def _season_or_month(text: str, reference: datetime) -> Interval | None:
    """ "last June", "last summer", "spring 2024": the period, which polyg.core.text.time does not
    read (a season starts on the first of its first month; "last" is the latest one before the
    reference)."""
    quarter = _QUARTER.fullmatch(text.strip())
    if quarter is not None:
        shift = {"last": -1, "previous": -1, "past": -1, "this": 0, "next": 1}[quarter.group(1).lower()]
        index = reference.year * 4 + (reference.month - 1) // 3 + shift
        start = datetime(index // 4, index % 4 * 3 + 1, 1, tzinfo=reference.tzinfo)
        end_index = index + 1
        return Interval(start, datetime(end_index // 4, end_index % 4 * 3 + 1, 1, tzinfo=reference.tzinfo))
    match = _SEASON_OR_MONTH.fullmatch(text.strip())
    if match is None or (match.group(1) is None and match.group(3) is None):
        return None
    word = match.group(2).lower()
    month = _SEASONS.get(word) or _MONTHS.index(word) + 1
    months = 3 if word in _SEASONS else 1
    if match.group(3):
        year = int(match.group(3))
    else:
        year = reference.year if month < reference.month else reference.year - 1
        if match.group(1).lower() == "next":
            year = reference.year if month > reference.month else reference.year + 1
        elif match.group(1).lower() == "this":
            year = reference.year
    start = datetime(year, month, 1, tzinfo=reference.tzinfo)
    end_month = month + months
    end = datetime(year + (end_month - 1) // 12, (end_month - 1) % 12 + 1, 1, tzinfo=reference.tzinfo)
    return Interval(start, end)


def _time_phrases(sentence: Span) -> list[tuple[int, str, str]]:
    """(the word opening it, the time expression) for each time expression of the sentence:
    the tagger's dates and times, and what polyg's time references find that it missed."""
    out: list[tuple[int, str, str]] = []
    taken: list[tuple[int, int]] = []
    modifiers: list[tuple[int, int]] = []
    doc = sentence.doc
    for ent in _entity_spans(sentence):
        if ent[0].ent_type_ not in ("DATE", "TIME"):
            continue
        if (
            len(ent) == 1
            and ent[0].dep_ in ("compound", "amod")
            and ent[0].head.pos_ == "NOUN"
            and ent[0].head.lower_ not in TIME_WORDS
            and ent[0].head.ent_type_ not in ("DATE", "TIME")
        ):
            # "the Sunday edition", "the March release": a kind of thing, not when it happened
            # (unless the thing is a happening: "the Monday standup").
            if ent[0].head.lemma_.lower() not in EVENT_HEADS | {"meeting", "call", "session", "shift"}:
                modifiers.append((ent.start_char, ent.end_char))
                continue
        tokens = [t for t in ent if not (t.tag_ == "POS")]
        while tokens and _swallowed(tokens[-1]):
            tokens.pop()
        while tokens and tokens[0].lower_ in ("the",):
            tokens.pop(0)
        text = _text(tokens)
        opener = _opener(doc, ent.start)
        taken.append((ent.start_char, ent.end_char))
        bounds = _RANGE_INSIDE.split(text, maxsplit=1)
        if opener in ("from", "between") and len(bounds) == 2:
            # "from March 2019 to June 2023" tagged as one date.
            out.append((ent.start_char, "from", bounds[0]))
            out.append((ent.start_char, "until", bounds[1]))
            continue
        out.append((ent.start_char, opener, text))
    base = sentence.start_char
    for ref in find_time_refs(sentence.text):
        start, end = base + ref.start, base + ref.end
        if any(s <= start and end <= e for s, e in modifiers):
            continue
        if any(s <= start and end <= e for s, e in taken) and any(
            o == "" or t.lower() in ref.text.lower() for _, o, t in out
        ):
            # Within a date the tagger found (tried first); still tried when the tagger's span
            # swallowed other words ("search-13 yesterday").
            if any(ref.text.lower() == t.lower() for _, _, t in out):
                continue
        text = re.sub(r"['’]s\b", "", ref.text)
        words = text.split()
        opener = ""
        if words and words[0].lower() in _SPAN_START | _SPAN_END | {"in", "on", "at", "during", "after", "before"}:
            opener, text = words[0].lower(), " ".join(words[1:])
        elif (token := doc.char_span(start, end, alignment_mode="expand")) is not None:
            opener = _opener(doc, token.start)
        if text and not re.search(r"\b(?:from|between)\b", text, re.IGNORECASE):
            out.append((start, opener, text))
            taken.append((start, end))
    return sorted(out)


def _entity_spans(sentence: Span) -> list[Span]:
    """The sentence's named-entity spans, read from its tokens (`Span.ents` walks the whole
    document's entities for every sentence: quadratic on a long memory)."""
    out: list[Span] = []
    start = -1
    for token in sentence:
        if token.ent_iob_ == "B" or (token.ent_iob_ == "I" and start < 0):
            if start >= 0:
                out.append(sentence.doc[start : token.i])
            start = token.i
        elif token.ent_iob_ == "O" and start >= 0:
            out.append(sentence.doc[start : token.i])
            start = -1
    if start >= 0:
        out.append(sentence.doc[start : sentence.end])
    return [s for s in out if s[0].ent_type_]


_RANGE_INSIDE = re.compile(r"\s+(?:to|until|till|through|and|-|–)\s+", re.IGNORECASE)


def _opener(doc: Doc, start: int) -> str:
    if start == 0:
        return ""
    before = doc[start - 1].lower_
    if before == "of" and start >= 2 and doc[start - 2].lower_ == "as":
        return "as of"
    return before


# --- causes ---------------------------------------------------------------------------------

_MARKERS = {("because", "of"), ("due", "to"), ("owing", "to"), ("thanks", "to")}


def _causes(sentence: Span, memory: _Memory, dated: list[str] | None = None) -> Iterator[ExtractedCause]:
    """The sentence's causal links; `dated` gets each phrase whose opening time words were
    stripped (the event the sentence's time is about)."""
    evidence = _clip(sentence.text.strip())
    times: list[tuple[str, str]] | None = None  # the sentence's time expressions, read once if needed
    for token in sentence:
        found = list(_cause_at(token, memory))
        if found and times is None:
            # Only the expressions that say when (as `_times` reads them): "a six hour outage"
            # opens with how long, which is the effect itself.
            # "after the robot broke" is an event, not a time: only phrases that read as times.
            times = [
                (opener, text)
                for _, opener, text in _time_phrases(sentence)
                if opener not in _NOT_POINTS
                and text.lower() not in _VAGUE
                and not _DURATION.fullmatch(text.strip())
                and _reads_as_time(text, memory.reference)
            ]
        for cause, effect, confidence in found:
            untimed = _clip(_untimed(cause, times or [])), _clip(_untimed(effect, times or []))
            if dated is not None:
                dated += [new for new, old in zip(untimed, (cause, effect), strict=True) if new != _clip(old)]
            cause, effect = untimed
            if cause and effect and cause.lower() != effect.lower():
                yield ExtractedCause(cause, effect, confidence, evidence)


def _cause_at(token: Token, memory: _Memory) -> Iterator[tuple[str, str, float]]:
    lower = token.lower_
    doc = token.doc
    nxt = doc[token.i + 1].lower_ if token.i + 1 < len(doc) else ""
    # "A because of B", "A due to B": the marker's object is the cause.
    if (lower, nxt) in _MARKERS or (
        lower == "result" and nxt == "of" and token.i > 0 and doc[token.i - 1].lower_ == "a"
    ):
        marker = token
        prep = doc[token.i + 1]
        objects = [c for c in prep.children if c.dep_ == "pobj"] or [c for c in marker.children if c.dep_ == "pobj"]
        if not objects:
            return
        effect_verb = _governing_verb(marker)
        if effect_verb is None or _denied(marker, effect_verb):
            return
        excluded = _subtree_ids(_marker_root(marker, effect_verb))
        effect = _clause(effect_verb, excluded)
        for obj in [objects[0], *_conjuncts(objects[0])]:
            yield _phrase(obj, memory), effect, 0.9
        return
    # "A because B (and C)", "after A failed, B": an adverbial clause and its main clause.
    if token.dep_ == "advcl":
        mark = next((c for c in token.children if c.dep_ == "mark"), None)
        word = mark.lower_ if mark is not None else ""
        if word == "because" or (word == "after" and token.lemma_.lower() in FAIL_VERBS):
            effect_verb = token.head
            if effect_verb.dep_ == "acl" and effect_verb.head.dep_ == "ROOT":
                # "The queue filled up because ..." parsed as a noun phrase: the sentence is it.
                effect_verb = effect_verb.head
            if _denied(mark or token, effect_verb):
                return
            # Without a clause joined after the cause ("A because B, and C"): C is said apart;
            # "A because B, because C" hung on A's verb: C is B's cause, not A's (a chain).
            earlier = [
                c
                for c in effect_verb.children
                if c.i < token.i and c.i in _because_clauses(effect_verb) and c.dep_ == "advcl"
            ]
            if word == "because" and earlier:
                effect = _clause(
                    earlier[-1], {i for c in earlier[-1].children if c.dep_ == "advcl" for i in _subtree_ids(c)}
                )
            else:
                effect = _clause(
                    effect_verb,
                    _subtree_ids(token)
                    | _which_clauses(effect_verb)
                    | _joined_after(effect_verb, token.i)
                    | _because_clauses(effect_verb),
                )
            confidence = 0.9 if word == "because" else 0.7
            for clause_verb in [token, *(c for c in token.conjuncts if c.i > token.i and _is_clause(c))]:
                # "A because B, because C": B's own cause is a link of its own, not part of B.
                nested = {i for c in clause_verb.children if c.dep_ == "advcl" for i in _subtree_ids(c)}
                nested |= _asides(clause_verb)
                cause = _clause(clause_verb, _conj_ids(clause_verb) | nested)
                yield _resolve(cause, memory), effect, confidence
            return
    # "A, so B".
    if (
        lower == "so"
        and token.dep_ in ("advmod", "cc", "mark")
        and token.i > 0
        and doc[token.i - 1].lower_ in (",", "and")
    ):
        effect_verb = (
            token.head
            if token.dep_ != "cc"
            else next((c for c in token.head.children if c.dep_ == "conj" and c.i > token.i), None)
        )
        if effect_verb is None:
            return
        cause_verb = effect_verb.head if effect_verb.dep_ in ("conj", "advcl", "ccomp") else None
        if cause_verb is None or cause_verb.i > token.i:
            cause_verb = next(
                (c for c in effect_verb.children if c.dep_ in ("ccomp", "advcl", "conj") and c.i < token.i), None
            )
        if token.dep_ == "cc":
            cause_verb = token.head
        if cause_verb is None or cause_verb.i == effect_verb.i or effect_verb.pos_ not in ("VERB", "AUX"):
            return  # ", so peaceful!": no clause after "so"
        if cause_verb.pos_ not in ("VERB", "AUX"):
            return
        # "A because B, so C": C's cause is A; B is A's own cause (a link of its own).
        because = {
            i
            for c in cause_verb.children
            if c.dep_ == "advcl" and any(m.dep_ == "mark" and m.lower_ == "because" for m in c.children)
            for i in _subtree_ids(c)
        }
        if cause_verb.head.i == effect_verb.i:  # the cause's clause hangs under the effect's verb
            cause = _clause(cause_verb, {token.i} | because)
            effect = _clause(effect_verb, _subtree_ids(cause_verb) | {token.i})
        else:
            cause = _clause(cause_verb, _subtree_ids(effect_verb) | {token.i} | because)
            effect = _clause(effect_verb, {token.i})
        yield _resolve(cause, memory), effect, 0.75
        return
    if token.pos_ != "VERB":
        return
    lemma = token.lemma_.lower()
    if _negated(token):
        return
    passive = any(c.dep_ in ("auxpass", "nsubjpass") for c in token.children)
    # "B was caused by A", "B was broken by A".
    if passive and ((lemma in CAUSE_VERBS and CAUSE_VERBS[lemma] is None) or lemma in DAMAGE_VERBS):
        agent = _prep_object(token, "by", dep="agent")
        subject = next((c for c in token.children if c.dep_ == "nsubjpass"), None)
        if agent is None or subject is None or agent.ent_type_ in ("DATE", "TIME", "QUANTITY", "CARDINAL", "PERCENT"):
            return  # "was delayed by two weeks": how much, not by what
        if lemma in CAUSE_VERBS and CAUSE_VERBS[lemma] is None:
            effect = _clause(subject, set())
        else:
            by = agent.head
            effect = _clause(token, _subtree_ids(by) | _joined_after(token, by.i))
        for obj in [agent, *_conjuncts(agent)]:
            yield _phrase(obj, memory), _resolve(effect, memory), 0.9
        return
    # "A caused B", "A led to B", "A resulted in B", "A broke B".
    if lemma in CAUSE_VERBS or lemma in DAMAGE_VERBS:
        cue = CAUSE_VERBS.get(lemma)
        if lemma in DAMAGE_VERBS and lemma not in CAUSE_VERBS:
            if lemma in ("take", "bring", "knock") and not any(c.lower_ == "down" for c in token.children):
                return
        subject = next((c for c in token.children if c.dep_ == "nsubj"), None)
        if subject is None and token.dep_ == "conj":
            return
        effect_of = _prep_object(token, cue) if cue else next((c for c in token.children if c.dep_ == "dobj"), None)
        clause_of = next((c for c in token.children if c.dep_ in ("ccomp", "xcomp")), None)
        if subject is not None and effect_of is None and clause_of is not None and lemma in CAUSE_VERBS and not cue:
            # "The power cut caused the freezer to warm up."
            cause = _resolve(_clause(subject, set()), memory)
            if subject.lower_ in ("which", "that") and token.head.pos_ in ("VERB", "AUX") and token.head.i != token.i:
                cause = _clause(token.head, _subtree_ids(token))
            yield cause, _clause(clause_of, set()), 0.9
            return
        if subject is None or effect_of is None:
            return
        cause = _resolve(_clause(subject, set()), memory)
        if subject.lower_ in ("which", "that") and token.head.pos_ in ("VERB", "AUX") and token.head.i != token.i:
            # "The gateway timed out, which caused ...": the clause it hangs on is the cause
            # (without its own "because ...": a link of its own).
            cause = _clause(token.head, _subtree_ids(token) | _because_clauses(token.head))
        for target in [effect_of, *_conjuncts(effect_of)]:
            yield cause, _phrase(target, memory), 0.9
        return
    if lemma in ("result", "stem") and (source := _prep_object(token, "from")) is not None:
        subject = next((c for c in token.children if c.dep_ == "nsubj"), None)
        if subject is not None:
            yield _phrase(source, memory), _resolve(_clause(subject, set()), memory), 0.85


_TIME_OPENERS = _SPAN_START | _SPAN_END | {"in", "on", "at", "during", "by", "around", "about", "before", "after"}


def _reads_as_time(text: str, reference: datetime) -> bool:
    """Whether a phrase the time finders returned names a time (a clock, a day, a period)."""
    if _CLOCK.search(text):
        return True
    try:
        return (_season_or_month(text, reference) or parse_range(text, reference=reference)) is not None
    except (PolygError, ValueError, OverflowError):
        return False


def _untimed(phrase: str, times: list[tuple[str, str]]) -> str:
    """A cause or effect without the time expressions it opens or ends with ("Yesterday at
    21:15 the freezer failed", "the deploy failed on Tuesday" -> "the freezer failed", "the
    deploy failed"): the time is the event's `occurred_at`, and an answer or a lookup by the
    phrase must not carry it ("because Yesterday at 21:15 ..."). A time inside the phrase stays
    ("the Tuesday release"): only its edges are when it happened."""
    rest = phrase
    stripped = True
    while stripped:
        stripped = False
        for opener, text in times:
            # The word before a time opens it only when it is a preposition ("on Tuesday"),
            # not a name ("moved to Bristol last month").
            for said in (f"{opener} {text}", text) if opener in _TIME_OPENERS else (text,):
                end = len(said)
                if rest[:end].lower() == said.lower() and (end == len(rest) or not rest[end].isalnum()):
                    rest, stripped = rest[end:].lstrip(" ,;"), True
                    break
                start = len(rest) - end
                if start > 0 and rest[start:].lower() == said.lower() and not rest[start - 1].isalnum():
                    rest, stripped = rest[:start].rstrip(" ,;"), True
                    break
            if stripped:
                break
    return rest if any(c.isalnum() for c in rest) else phrase


def _joined_after(verb: Token, position: int) -> set[int]:
    """The words of the clauses joined to `verb` after `position` ("was ruined by hail, so the
    winery bought ...", "crashed because X, and Y"): what follows is said apart."""
    out: set[int] = set()
    for c in verb.children:
        if c.i <= position:
            continue
        if c.dep_ in ("conj", "advcl", "ccomp", "parataxis") and _is_clause(c):
            out |= _subtree_ids(c)
        elif c.dep_ == "cc" or (c.dep_ in ("advmod", "mark") and c.lower_ == "so"):
            out.add(c.i)
    return out


def _which_clauses(verb: Token) -> set[int]:
    """The words of the ", which ..." clauses hung on `verb`: a statement of their own about
    what the verb says ("broke ..., which blocked the release"), not part of its phrase."""
    return {
        i
        for c in verb.children
        if c.dep_ in ("advcl", "relcl", "ccomp", "conj")
        and any(s.dep_ == "nsubj" and s.lower_ == "which" for s in c.children)
        for i in _subtree_ids(c)
    }


def _asides(head: Token) -> set[int]:
    """The words of the ", which ..." clauses anywhere under `head` (set off by a comma): what
    they say is a statement of its own ("because a lock, which blocked the run, was held")."""
    out: set[int] = set()
    for t in head.subtree:
        if (
            t.i != head.i
            and t.dep_ in ("relcl", "advcl", "acl")
            and any(
                s.dep_ == "nsubj" and s.lower_ == "which" and s.i > 0 and s.nbor(-1).text == "," for s in t.children
            )
        ):
            out |= _subtree_ids(t)
    return out


def _because_clauses(verb: Token) -> set[int]:
    """The words of the "because ..." clauses hung on `verb` (their link is made on its own)."""
    return {
        i
        for c in verb.children
        if c.dep_ == "advcl" and any(m.dep_ == "mark" and m.lower_ == "because" for m in c.children)
        for i in _subtree_ids(c)
    }


def _governing_verb(token: Token) -> Token | None:
    current = token
    for _ in range(6):
        if current.pos_ in ("VERB", "AUX") and current.i != token.i:
            return current
        if current.head.i == current.i:
            return current if current.pos_ in ("VERB", "AUX") else None
        current = current.head
    return None


def _marker_root(marker: Token, verb: Token) -> Token:
    """The child of `verb` whose subtree holds the marker phrase."""
    current = marker
    while current.head.i != verb.i and current.head.i != current.i:
        current = current.head
    return current


def _denied(marker: Token, verb: Token) -> bool:
    """ "was not because of", "not due to", "wasn't caused by": the link is denied."""
    doc = marker.doc
    if marker.i > 0 and doc[marker.i - 1].lower_ in _NEG:
        return True
    return any(c.dep_ == "neg" for c in verb.children) and verb.lemma_ == "be"


def _subtree_ids(token: Token) -> set[int]:
    return {t.i for t in token.subtree}


def _is_clause(token: Token) -> bool:
    """A verb, or a noun the parser hung a verb on ("the queue filled up" read as a noun
    phrase)."""
    return token.pos_ in ("VERB", "AUX") or (
        token.pos_ in ("NOUN", "PROPN") and any(c.dep_ in ("acl", "relcl") and c.i > token.i for c in token.children)
    )


def _conj_ids(verb: Token) -> set[int]:
    out: set[int] = set()
    for c in verb.children:
        if c.dep_ == "conj" and _is_clause(c):
            out |= _subtree_ids(c)
        if c.dep_ == "cc":
            out.add(c.i)
    return out


def _clause(head: Token, excluded: set[int]) -> str:
    """The words of `head`'s subtree without `excluded`, trimmed of punctuation and of the
    conjunctions and markers that joined it to the rest."""
    # In the document's order: a relative clause hung on a noun after its verb would else
    # come before that verb ("a lock which blocked the run was held").
    tokens = sorted((t for t in head.subtree if t.i not in excluded), key=lambda t: t.i)
    while tokens and (
        tokens[0].is_punct or tokens[0].dep_ in ("cc", "mark") or tokens[0].lower_ in ("and", "so", "then")
    ):
        tokens.pop(0)
    while tokens and (tokens[-1].is_punct or tokens[-1].dep_ in ("cc",) or tokens[-1].lower_ in ("and", "so")):
        tokens.pop()
    return re.sub(r"\s+", " ", _text(tokens)).strip()


def _phrase(token: Token, memory: _Memory) -> str:
    """A noun phrase cause or effect: its words, without its conjuncts."""
    return _resolve(_clause(token, _conj_ids_noun(token)), memory)


def _conj_ids_noun(token: Token) -> set[int]:
    out: set[int] = set()
    for c in token.children:
        if c.dep_ == "conj":
            out |= _subtree_ids(c)
        if c.dep_ == "cc":
            out.add(c.i)
    return out


def _resolve(phrase: str, memory: _Memory) -> str:
    """ "It", "this", "that" as a cause or effect: what the sentence before said."""
    if phrase.lower() in ("it", "this", "that", "which"):
        return memory.previous_clause
    return phrase


def _clip(text: str) -> str:
    return text[:MAX_PHRASE_CHARS].strip()
