"""What a question asks for, and the sentences of evidence that answer it (the rule synthesiser's
reading of the question): a why-question wants the cause, a who-question the subject, a
when-question the date, "what happened after X" the events after X's time, and any other
question the facts whose predicate it names. Each helper picks from the evidence recall already
read; none invents text: a sentence is a stored fact rendered in English, a stored event, or a
stored memory's own sentence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from polyg.core.recall.evidence import Evidence
from polyg.core.search.service import STOPWORDS
from polyg.core.text.word_prior import informativeness

Asks = Literal["why", "who", "describe", "when", "after", "before", "what"]

_WORD = re.compile(r"[a-z0-9][a-z0-9_.-]*")
_WHY = re.compile(r"^\s*why\b|\b(?:root cause|caused|cause of|what broke|reason|led to)\b", re.I)
_WHO = re.compile(r"^\s*(?:who|whom|whose)\b", re.I)
# "Who is Ravi?" asks what Ravi is (their facts and what was said), not for a subject.
_DESCRIBE = re.compile(r"^\s*(?i:who)(?:'s| is| was| are| were)\s+(?:[A-Z][\w.'-]*\s*)+\??\s*$")
_WHEN = re.compile(
    r"^\s*(?:when|what time|at what time|what date|on what day|how long ago|"
    r"(?:in |during )?(?:what|which) (?:year|month|day|date|week)(?:'s)?)\b",
    re.I,
)
_AFTER = re.compile(r"\bhappened (?:right |just |shortly )?(after|before)\b(?P<rest>.*)", re.I)
# A sentence that states a cause, and one that denies it.
CAUSE_WORDS = re.compile(
    r"\b(?:because|due to|caused by|as a result of|broken by|broke|led to|resulted in|so that|since|after)\b", re.I
)
_DENIED = re.compile(r"\b(?:not|never|n't|no longer)\b[^.]{0,30}\b(?:caus|because|due|broke|led)", re.I)
_CAUSE_SPLIT = re.compile(r"\b(?:because of|because|due to|caused by|broken by|as a result of)\b", re.I)
# Capitalised words that are not names of people or things (sentence openers, days, months).
_NOT_NAMES = frozenset(
    "the a an we i our my it this that at on in after before yesterday today monday tuesday wednesday "
    "thursday friday saturday sunday january february march april may june july august september "
    "october november december since from until".split()
)
# Predicates said with "is" ("member_of" -> "is a member of").
_COPULAR = {
    "member_of": "is a member of",
    "part_of": "is part of",
    "manager_of": "is the manager of",
    "lead_of": "is the lead of",
    "located_in": "is located in",
    "based_in": "is based in",
    "married_to": "is married to",
    "sibling_of": "is a sibling of",
    "reports_to": "reports to",
    "is_a": "is a",
}
# Nouns that take "the" when they end an object's name ("the Platform team").
_THE_HEADS = frozenset(
    "team service cluster project pipeline database group department office api library app "
    "platform system squad unit lab committee board".split()
)
# Question words that name a predicate ("working on" asks for works_on).
_PREDICATE_CUES = {
    "work": ("works_on", "works_at", "works_for", "worked_on"),
    "live": ("lives_in", "lived_in", "moved_to"),
    "lead": ("leads", "manages", "lead_of", "manager_of"),
    "head": ("leads", "manages", "lead_of", "manager_of"),
    "manag": ("manages", "manager_of", "leads"),
    "team": ("member_of", "leads", "works_on", "joined"),
    "band": ("member_of",),
    "group": ("member_of",),
    "club": ("member_of",),
    "squad": ("member_of",),
    "choir": ("member_of",),
    "department": ("member_of", "works_at"),
    "own": ("owns", "owned_by"),
    "depend": ("depends_on",),
    "report": ("reports_to",),
    "school": ("studies_at",),
    "attend": ("studies_at",),
    "stud": ("studies_at",),
    "college": ("studies_at",),
}


def asks(query: str) -> Asks:
    if _WHY.search(query):
        return "why"
    after = _AFTER.search(query)
    if after:
        return "after" if after.group(1).lower() == "after" else "before"
    if _DESCRIBE.search(query):
        return "describe"
    if _WHO.search(query):
        return "who"
    if _WHEN.search(query):
        return "when"
    return "what"


def anchor_text(query: str) -> str:
    """What "what happened after X" names as X."""
    found = _AFTER.search(query)
    return found.group("rest").strip(" ?.") if found else query


def word_key(word: str) -> str:
    """What a lower-cased word is compared by: its first five letters once an inflection is
    dropped, so a word meets its inflections ("play", "plays", "played"; "move", "moved";
    "study", "studies"), which its first five letters alone keep apart."""
    return _uninflected(word)[:5]


def _uninflected(word: str) -> str:
    if not word.isalpha() or len(word) < 4:
        return word
    if word.endswith(("ies", "ied")) and len(word) > 4:
        return word[:-3] + "y"
    for ending in ("ing", "ed"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            base = word[: -len(ending)]
            # "stopped" -> "stop"; "moving" -> "mov", as "move" is keyed
            return base[:-1] if base[-1] == base[-2] and base[-1] not in "aeiouls" else base
    if word.endswith("es") and not word.endswith(("ees", "oes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word[:-1] if word.endswith("e") and not word.endswith("ee") else word


def words(text: str) -> set[str]:
    return {word_key(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 2}


def overlap(a: str, b: str) -> float:
    """Share of `a`'s content words that `b` holds (by their first five letters)."""
    wa = words(a)
    return len(wa & words(b)) / len(wa) if wa else 0.0


# --- facts in English ---------------------------------------------------------------------------


def fact_sentence(fact: Evidence, validity: str | None) -> str:
    predicate = fact.predicate or ""
    verb = _COPULAR.get(predicate, predicate.replace("_", " "))
    tail = f" ({validity})" if validity else ""
    return f"{_cap(_with_article(fact.subject))} {verb} {_with_article(fact.object)}{tail}."


def _with_article(name: str | None) -> str:
    """A name as a sentence says it: a thing named by common nouns ("community garden", "payroll
    service", "Atlas cluster") takes "the"; a proper name ("Noor", "Hollow Oak Mill") does not."""
    value = (name or "").strip()
    if not value or value.lower().startswith(("the ", "a ", "an ")):
        return value
    words = value.split()
    common = len(words) > 1 and all(w.islower() for w in words)
    return f"the {value}" if common or words[-1].lower() in _THE_HEADS else value


def predicate_match(query: str, fact: Evidence, names: Sequence[str] = ()) -> float:
    """How well a fact's predicate answers the question's words: 1 when the question names it
    ("working on" -> works_on), 0.5 when they share a word, else 0. Words inside the names the
    question asks about are not cues ("who manages the Search team" does not ask for a team)."""
    predicate = (fact.predicate or "").lower()
    lowered = query.lower()
    for name in names:
        lowered = lowered.replace(name.lower(), " ")
    for cue, predicates in _PREDICATE_CUES.items():
        if cue in lowered and predicate in predicates:
            return 1.0
    shared = words(predicate.replace("_", " ")) & words(lowered)
    return 0.5 if shared else 0.0


def about(fact: Evidence, names: Sequence[str]) -> bool:
    """The fact's object is one of the names the question asks about (an inverse lookup)."""
    obj = (fact.object or "").lower()
    return any(n.lower() == obj or n.lower() in obj or obj in n.lower() for n in names if n.strip())


# --- causes stated in memories ------------------------------------------------------------------


def denies(text: str) -> bool:
    return bool(_DENIED.search(text))


def states_cause(text: str) -> bool:
    return bool(CAUSE_WORDS.search(text)) and not denies(text)


def cause_part(text: str) -> str:
    """The clause after "because" (what the sentence gives as the cause)."""
    parts = _CAUSE_SPLIT.split(text, maxsplit=1)
    return parts[1] if len(parts) > 1 else text


def effect_part(text: str) -> str:
    parts = _CAUSE_SPLIT.split(text, maxsplit=1)
    return parts[0] if len(parts) > 1 else text


# A cause explains what a why-question asks about when its text holds this share of the
# question's words, each weighed by how informative it is in English: a common verb alone
# ("stop") does not make "Line 3 stopped" the answer to "why did the wind turbine stop".
EXPLAINS = 1 / 3
_WHY_FRAME = re.compile(r"\b(?:root|causes?|caused|reasons?|why)\b", re.I)


def memory_chain(query: str, memories: Sequence[Evidence], limit: int = 4) -> list[Evidence]:
    """The stored sentences that explain the question, from the one that answers it to its root:
    the best memory stating a cause of what the question names, then a memory whose effect is
    that cause, and so on (a chain told over several memories)."""
    causal = [m for m in memories if states_cause(m.text)]
    if not causal:
        return []
    asked = why_words(query)
    first = max(causal, key=lambda m: (overlap(asked, effect_part(m.text)) + m.score, m.score))
    if explains(asked, effect_part(first.text)) < EXPLAINS:
        return []  # memories are ranked relative to each other: the best may be unrelated
    return [first, *causes_of(cause_part(first.text), causal, limit - 1, [first])]


def causes_of(cause: str, memories: Sequence[Evidence], limit: int, seen: Sequence[Evidence] = ()) -> list[Evidence]:
    """Memories that state why `cause` happened, walked back to the root (at most `limit`)."""
    path: list[Evidence] = []
    causal = [m for m in memories if states_cause(m.text) and m not in seen]
    while len(path) < limit:
        nxt = [m for m in causal if m not in path and overlap(cause, effect_part(m.text)) >= 0.5]
        if not nxt:
            break
        step = max(nxt, key=lambda m: overlap(cause, effect_part(m.text)))
        path.append(step)
        cause = cause_part(step.text)
    return path


def on_topic(query: str, memories: Sequence[Evidence]) -> bool:
    """Some memory holds the share of the question's words that explains it."""
    return any(explains(query, m.text) >= EXPLAINS for m in memories)


def explains(query: str, text: str) -> float:
    """Share of the why-question's content words (less those framing it) that `text` holds,
    each weighed by how informative it is in English (`word_prior.informativeness`)."""
    query = why_words(query)
    asked = {word_key(w): w for w in _WORD.findall(query.lower()) if w not in STOPWORDS and len(w) > 2}
    if not asked:
        return 0.0
    held = words(text)
    weight = {key: max(informativeness(word), 0.05) for key, word in asked.items()}
    return sum(w for key, w in weight.items() if key in held) / sum(weight.values())


def why_words(query: str) -> str:
    """A why-question without the words that frame it ("What was the root cause of the backup
    failure?" asks about "the backup failure")."""
    return _WHY_FRAME.sub(" ", query)


# Words that say who a person is to someone ("my brother Ravi", "Mr. Patel is Zoe's teacher").
RELATION_WORDS = re.compile(
    r"\b(?:brother|sister|daughter|son|wife|husband|partner|mother|father|mum|mom|dad|aunt|uncle|"
    r"cousin|grandmother|grandfather|niece|nephew|friend|neighbou?r|colleague|boss|manager|teacher|"
    r"coach|doctor|dentist|landlord|flatmate|roommate|mentor|lead|founder|owner|ceo|cto|"
    r"cat|dog|pet|puppy|kitten|horse|rabbit|parrot)\b",
    re.I,
)


def introduces(text: str, name: str) -> bool:
    """The sentence names `name` with a word that says who they are."""
    return name.lower() in text.lower() and bool(RELATION_WORDS.search(text))


def names_in(text: str, query: str) -> list[str]:
    """Capitalised words of `text` that the question does not name (candidate answers to who)."""
    asked = {w.lower() for w in re.findall(r"[A-Za-z][\w-]*", query)}
    found = re.findall(r"\b[A-Z][a-z][\w-]*", text)
    return [w for w in found if w.lower() not in _NOT_NAMES and w.lower() not in asked]


_OPENERS = frozenset("the a an our we its it this that these those my their his her they some".split())


def mid_sentence(text: str | None) -> str:
    """A sentence as a clause inside another: "The pool ran out" -> "the pool ran out" (names
    and acronyms keep their capitals)."""
    value = (text or "").strip().rstrip(".")
    first = value.split(" ", 1)[0]
    return value[:1].lower() + value[1:] if first.lower() in _OPENERS else value


def because(cause: str | None) -> str:
    # "because of" would read better before a noun phrase, but a parse-free test for one
    # misreads clauses; the chain keeps one connective.
    return f"because {mid_sentence(cause)}"


def _cap(text: str | None) -> str:
    value = (text or "").strip()
    return value[:1].upper() + value[1:]
