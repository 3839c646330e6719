"""Rule-based relationship extraction from one observation's text (spec 004's seven types).

Each sentence is matched against the seven relations in active voice ("X uses Y") and, where
the language has one, in passive voice ("Y is used by X", "Y is caused by X"), which swaps
source and target. A negated statement ("X does not use Y", "X is not part of Y", "X never
caused Y") is recognised and yields no relationship. The object may list several names
("uses Redis, Kafka and Postgres"); it ends at punctuation or at a word that starts a new
phrase ("uses Redis for caching" names Redis only).

The subject of a sentence is the entity whose observation it is when the sentence has none
("Uses Redis"), starts with a pronoun ("It uses Redis"), or names that entity; any other
subject is a name to resolve, like the objects. Resolution against the graph is the caller's
(`polyg.core.graphrag.extract`): this module only reads text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from polyg.core.text.sentences import split as split_sentences

RELATIONS = ("relates_to", "causes", "part_of", "implements", "extends", "uses", "depends_on")
Voice = Literal["active", "passive"]

NOT = r"(?:\s+not|n['’]t|\s+never|\s+no\s+longer)"
NEGATION = (
    r"(?:\b(?:does|do|did|is|are|was|were|has|have|had|can|could|will|would|should|may|might)"
    rf"{NOT}|\bcannot|\bnever|\bno\s+longer|\bnot)\s+"
)
AUX = r"\b(?:is|are|was|were|has\s+been|have\s+been|had\s+been|will\s+be|can\s+be|may\s+be)"
BE = r"(?:is|are|was|were)"
# Whether the words between a subject and its object deny the relation.
DENIAL = re.compile(r"\bnot\b|n['’]t\b|\bnever\b|\bno\s+longer\b|\bcannot\b", re.IGNORECASE)

# relation -> active verb forms, passive participle (None: no passive form)
FORMS: dict[str, tuple[str, str | None]] = {
    "causes": (r"causes|caused|cause|is\s+the\s+cause\s+of|was\s+the\s+cause\s+of", "caused"),
    "implements": (r"implements|implemented|implement", "implemented"),
    "relates_to": (r"relates\s+to|related\s+to|relate\s+to", None),
    "part_of": (rf"{BE}{NOT}?\s+(?:a\s+|an\s+)?part\s+of|forms\s+part\s+of", None),
    "extends": (r"extends|extended|extend", "extended"),
    # "used to" is a habit ("used to play"), not a use.
    "uses": (r"uses|used(?!\s+to\b)|use", "used"),
    "depends_on": (rf"depends\s+on|depended\s+on|depend\s+on|{BE}{NOT}?\s+dependent\s+on", r"depended\s+on"),
}

# A word that starts a new phrase ends an object ("uses Redis for caching").
STOP_WORDS = frozenset(
    """for to in on at with without because when while which that who whom whose via through since
    after before during of from as if so but than where whereas although though until unless by
    into onto within across against about over under between""".split()
)
LEADING = frozenset("the a an its their his her our my your this that these those and but or so then while".split())
PRONOUNS = frozenset("it this that they he she we i you which who".split())
# Pronouns that, as an object, mean the entity the observation belongs to.
SELF = frozenset("it itself this them".split())
# Adverbs and auxiliaries left between a subject and its verb ("Service also uses").
SUBJECT_TAIL = frozenset(
    """also still now mainly mostly heavily directly indirectly only often always sometimes usually
    currently primarily partly largely really actually does do did is are was were has have had
    can could will would should may might""".split()
)
# A semicolon ends a statement too ("uses Redis; depends on Kafka").
CLAUSE_END = re.compile(r"(?<=;)\s+")
LIST_SPLIT = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+")
WORD = re.compile(r"[\w'-]+|[^\w\s]", re.UNICODE)
MAX_OBJECTS = 10
COORDINATED = re.compile(r"(?:\band|\bbut|,)\s*(?:also\s+)?$", re.IGNORECASE)


@dataclass(frozen=True)
class Statement:
    """One relation a sentence states: `subject` and `objects` as written (None: the entity the
    observation belongs to), the voice, and whether it was negated."""

    relation: str
    voice: Voice
    subject: str | None
    objects: tuple[str, ...]
    negated: bool
    sentence: str


def _compile() -> list[tuple[str, Voice, re.Pattern[str]]]:
    patterns: list[tuple[str, Voice, re.Pattern[str]]] = []
    for relation, (active, participle) in FORMS.items():
        if participle is not None:
            passive = rf"{AUX}{NOT}?\s+(?:{participle})\s+by\s+(?=(?P<rest>\S.*))"
            patterns.append((relation, "passive", re.compile(passive, re.IGNORECASE)))
        active_re = rf"(?:{NEGATION})?\b(?:{active})\b\s+(?=(?P<rest>\S.*))"
        patterns.append((relation, "active", re.compile(active_re, re.IGNORECASE)))
    return patterns


PATTERNS = _compile()


def sentences(text: str) -> list[str]:
    """The sentences (and semicolon-separated clauses) of an observation, which may be a
    terse lowercase note."""
    return [c.strip() for s in split_sentences(text, any_start=True) for c in CLAUSE_END.split(s) if c.strip()]


def _words(text: str) -> list[str]:
    return text.split()


def clean_name(phrase: str) -> str:
    """A name as written, without leading articles or surrounding quotes and punctuation."""
    words = _words(phrase.strip().strip("\"'`()[]{}"))
    while words and words[0].lower() in LEADING:
        words = words[1:]
    return " ".join(words).strip(" \"'`.,;:!?()[]{}")


def objects_of(rest: str) -> tuple[str, ...]:
    """The names an object phrase lists, up to the first word that starts another phrase."""
    # A full stop ends the phrase, a dot inside a name ("Node.js", "api.router_12") does not.
    cut = re.split(r"[.;:!?](?=\s|$)|[()\[\]]", rest, maxsplit=1)[0]
    kept: list[str] = []
    for word in _words(cut):
        if word.lower().strip(",") in STOP_WORDS:
            break
        kept.append(word)
    while kept and kept[-1].lower().strip(",") in {"and", "or", "&", "but", "also", ""}:
        kept.pop()
    names = [clean_name(part) for part in LIST_SPLIT.split(" ".join(kept))]
    # "it" as an object is the observation's own entity ("Redis is used by it"), kept for the
    # caller to map; other pronouns ("which", "who") name nothing.
    return tuple(n for n in names if n and (n.lower() in SELF or n.lower() not in PRONOUNS))[:MAX_OBJECTS]


def subject_of(before: str) -> str | None:
    """The subject phrase before a verb, or None when it is the observation's own entity
    (no subject, or a pronoun)."""
    clause = re.split(r"[,:;()]", before)[-1]
    words = _words(clause)
    while words and words[-1].lower() in SUBJECT_TAIL:
        words = words[:-1]
    name = clean_name(" ".join(words))
    if not name or name.lower() in PRONOUNS:
        return None
    return name


def statements(text: str) -> list[Statement]:
    """Every relation the text states, sentence by sentence, in order of appearance. Within a
    sentence a match overlapping an earlier one is dropped ("is used by" is not also "used"),
    and an object list ends where the next relation starts ("uses X and implements Y")."""
    found: list[Statement] = []
    for sentence in sentences(text):
        matches: list[tuple[int, bool, str, Voice, re.Match[str]]] = []
        for relation, voice, pattern in PATTERNS:
            matches.extend((m.start(), voice == "active", relation, voice, m) for m in pattern.finditer(sentence))
        matches.sort(key=lambda m: (m[0], m[1]))
        kept: list[tuple[str, Voice, re.Match[str]]] = []
        taken_until = -1
        for start, _, relation, voice, match in matches:
            if start >= taken_until:
                kept.append((relation, voice, match))
                taken_until = match.start("rest")
        subject: str | None = None
        for i, (relation, voice, match) in enumerate(kept):
            end = kept[i + 1][2].start() if i + 1 < len(kept) else len(sentence)
            objects = objects_of(sentence[match.start("rest") : end])
            if not objects:
                continue
            negated = bool(DENIAL.search(sentence[match.start() : match.start("rest")]))
            before = sentence[: match.start()]
            # A verb coordinated with the one before ("X implements Y and uses Z") shares its subject.
            subject = subject_of(before) if i == 0 or not COORDINATED.search(before) else subject
            found.append(Statement(relation, voice, subject, objects, negated, sentence))
    return found
