"""Entity mentions in a query or a memory, by rules: quoted names, code identifiers, named
services, capitalised names (with the head noun that is part of how a thing is called:
"Growth team", "Timekeeper API") and names the graph already knows.

Words that name times (weekdays, months, holidays) are never mentions: "Tuesday's deploy" is
a time reference. A capitalised word opening a sentence counts only with another sign that it
is a name (a possessive, a second capitalised word, a "topic:" heading), since English
capitalises every sentence's first word. In a statement the signs are: the graph knows it, the
text capitalises it again mid-sentence, a person's verb follows it ("Melanie said"), or it is no
ordinary English word by the word prior (`polyg.core.text.word_prior.common_word`) and is followed by
its verb ("Caroline went", "Postgres is down"); "Art is my passion", "Running helps", "Wow",
"Thanks for...", "Sounds great" and "They're" have none.
Interjections and greetings are a closed backstop list: they never start a name ("Thanks Mel"
names Mel).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from polyg.core.text import sentences, word_prior

TIME_WORDS = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays "
    "fridays saturdays sundays january february march april may june july august september october "
    "november december jan feb mar apr jun jul aug sep sept oct nov dec christmas easter "
    "thanksgiving halloween eve new year year's day spring summer autumn fall winter today "
    "yesterday tomorrow tonight now tues thurs fri".split()
)
# Openers of questions and requests: never the start of a name.
STARTERS = frozenset(
    "what what's whats who who's whom whose which where where's when when's why how how's is are was "
    "were do does did can could should would will shall may might must has have had i i'm i've "
    "i'd i'll the a an any anything anyone tell show give list name find search look pull put remind "
    "explain summarize summarise suppose walk let let's please if and but or so then also just "
    "there there's here it it's this that these those my our your their his her we you they he she "
    "hey ok okay yes no not did don't doesn't didn't isn't wasn't aren't weren't before after since "
    "during until between on in at by for from with about of to because then also however meanwhile "
    "later finally first next".split()
)
# Interjections, greetings and discourse words: never (the start of) a name.
INTERJECTIONS = frozenset(
    "wow thanks thank thx hey hi hello yo bye goodbye yeah yea yes yep yup nope nah sure congrats glad sorry anytime "
    "congratulations awesome oh ohh ah ahh aw aww oops whoa woah woohoo yay hooray hmm hm mm haha "
    "hahaha lol omg ugh phew ok okay well anyway anyways alright cheers absolutely definitely totally "
    "really actually honestly seriously literally basically obviously clearly probably hopefully "
    "thankfully luckily unfortunately fortunately recently lately especially indeed".split()
)
# Words that open a statement without being its named subject: pronouns, quantifiers, numbers,
# conjunctions, adverbs ("Everyone was...", "Lots has...", "Plus pets are...", "Never had...").
_NOT_SUBJECT_NAMES = frozenset(
    "everyone everybody everything someone somebody something nobody nothing anybody mine yours ours "
    "some all each every many most few both several such lots plenty much more less one two three four "
    "five six seven eight nine ten plus while although though whenever wherever unless once never ever even "
    "been".split()
)
# Verbs a singular subject's name is followed by that no suffix rule finds: auxiliaries,
# modals and common irregular past tenses ("Caroline went", "Mel has").
_FINITE_VERBS = frozenset(
    "is was has had will would can could should shall may might must does did "
    "isn't wasn't hasn't hadn't won't can't couldn't doesn't didn't wouldn't shouldn't "
    "went got made said took gave came saw found told felt left kept thought bought brought built ran "
    "began wrote met sent spent lost won became held heard knew paid sold taught caught drove ate "
    "drank flew grew sang swam sat stood fell broke chose spoke rode threw wore hid led let put set "
    "quit read cut hit hurt shut".split()
)
# Adverbs between a subject and its verb ("Rafael also fixed").
_VERB_ADVERBS = frozenset(
    "also just never always still already often then now finally even recently once later soon "
    "sometimes usually really actually again".split()
)
_CONTRACTION = re.compile(r"['’](?:re|ve|ll|d|m)$|n['’]t$", re.IGNORECASE)

# Nouns that are part of a thing's name when they follow it ("Mobile team", "Kestrel project").
HEAD_NOUNS = frozenset(
    "team service project api app repo repository library module cluster band company group squad "
    "department org pipeline platform bucket channel board sdk cli server database db queue "
    "worker bot plugin group region office lab".split()
)
# A lowercase word naming which service it is ("shipping service", "auth service"), unless it
# is a determiner or a generic modifier.
_SERVICE = re.compile(r"\b([a-z][a-z0-9_-]*) (service|microservice)\b")
_NOT_SERVICE_NAMES = frozenset(
    "the a an this that our my your their his her its every each any some which what whose new old "
    "same other another web backend frontend customer external internal third-party one main".split()
)
_QUOTED = re.compile(r"[\"“”«]([^\"“”«»\n]{1,80})[\"“”»]")
_CODE = (
    re.compile(r"(?<![\w/.])[\w.-]*[A-Za-z_][\w.-]*/[\w./-]*\w"),  # paths: core/scheduler.go
    re.compile(
        r"\b[\w-]+\.(?:py|go|ts|tsx|js|jsx|rs|java|kt|rb|c|cc|cpp|h|hpp|cs|php|swift|sql|sh|ya?ml|json|toml|md|proto)\b"
    ),
    re.compile(r"\b[A-Za-z_][\w.]*\(\)"),  # calls: render_report()
    re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b"),  # snake_case
    re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b"),  # SCREAMING_CASE
    re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b"),  # CamelCase
    re.compile(r"\b[a-z]+[0-9]*[A-Z][A-Za-z0-9]*\b"),  # lowerCamelCase
)
_HYPHENATED = re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b")
# Hyphenated words that are ordinary English compounds ("cold-start", "load-testing").
_COMPOUND_FIRST = frozenset(
    "cold warm hot long short high low self non pre post re co multi cross well end real open zero anti "
    "semi sub super ultra near mid "
    "full half part day time one two three first second third last top bottom in out off on up "
    "down over under all ever never follow check sign log set roll read write".split()
)
_COMPOUND_LAST = frozenset(
    "start starts testing test tests based term time level side scale free only friendly like related on "
    "facing wide up down off out in over back run made driven aware safe proof ready ended bound "
    "term known time way year day week month hour minute".split()
)
# Titles and initials keep their full stop when a capitalised word follows ("Dr. Smith", "J.K.
# Rowling"), so that they join the name.
_WORD = re.compile(
    r"&|(?:Dr|Mr|Mrs|Ms|Mx|Prof|St|Sr|Jr)\.|(?:[A-Z]\.)+(?= [A-Z])|[A-Za-z](?:[\w&-]|\.(?=\w))*(?:['’][A-Za-z]+)?['’]?"
)
_CONNECTORS = frozenset({"of", "de", "van", "von", "da", "del", "la", "le", "&", "and"})
# What joins two names in a run of capitalised words.
_JOINT = re.compile(r" (?:and|&) ")
_REPORTING_VERB = re.compile(
    r" (?:said|says|told|tells|asked|asks|mentioned|thinks|thought|wants|wanted|keeps|kept|started|stopped|"
    r"left|joined|moved|quit|paused|cancelled|canceled|called|emailed|wrote|decided|promised|claims|claimed)\b"
)
_SENTENCE_END = re.compile(r"[.!?:;]\s*$")


@dataclass(frozen=True)
class Mention:
    text: str
    start: int
    end: int
    kind: str  # quoted, code, service, name, known


def find_mentions(
    text: str, known_names: Iterable[str] = (), *, statement: bool = False, capitalised: Collection[str] = ()
) -> list[Mention]:
    """The mentions in `text`, left to right, each once (case-insensitively); a mention inside
    a longer one is dropped. In a `statement` (a memory, not a question) a capitalised first
    word counts as a name when it reads as the sentence's subject: followed by a verb, or one of
    the lower-cased words `capitalised` (those the whole memory capitalises mid-sentence)."""
    found: list[Mention] = []
    found += [Mention(m.group(1).strip(), m.start(1), m.end(1), "quoted") for m in _QUOTED.finditer(text)]
    found += _known(text, known_names)
    for pattern in _CODE:
        found += [Mention(m.group(0).rstrip("."), m.start(), m.end(), "code") for m in pattern.finditer(text)]
    found += [
        Mention(m.group(0), m.start(), m.end(), "code")
        for m in _HYPHENATED.finditer(text)
        if _is_identifier(m.group(0))
    ]
    found += [
        Mention(m.group(0), m.start(), m.end(), "service")
        for m in _SERVICE.finditer(text)
        if m.group(1) not in _NOT_SERVICE_NAMES and m.group(1) not in TIME_WORDS
    ]
    known = [m for m in found if m.kind == "known"]
    for mention in _names(text, statement, frozenset(capitalised)):
        found += _around_known(text, mention, known)
    return _dedupe(found)


def _around_known(text: str, mention: Mention, known: list[Mention]) -> list[Mention]:
    """A run of capitalised words as the names it holds: itself, unless it holds a name the
    graph knows that the run only extends. "Jon and Gina" where the graph knows Jon is two
    people, not a firm called "Jon and Gina"; "Gina team up" is Gina, not a team. A run the
    graph knows no part of stays whole ("Procter and Gamble", "Growth team")."""
    inside = [k for k in known if mention.start <= k.start and k.end <= mention.end]
    if not inside or any(k.start == mention.start and k.end == mention.end for k in inside):
        return [mention]
    parts, start = [], mention.start
    for joint in _JOINT.finditer(text, mention.start, mention.end):
        parts.append((start, joint.start()))
        start = joint.end()
    parts.append((start, mention.end))
    if len(parts) == 1:  # the known name and a head noun after it, or a longer name
        first = inside[0]
        tail = text[first.end : mention.end]
        extends = first.start == mention.start and tail[1:] in HEAD_NOUNS and tail.startswith(" ")
        return [] if extends else [mention]
    return [
        Mention(text[start:end], start, end, "name")
        for start, end in parts
        if not any(k.start <= start and end <= k.end for k in inside)
    ]


def mask(text: str, mentions: Iterable[Mention], placeholder: str = "X") -> str:
    """`text` with each mention replaced, so that the words of a name ("Root Cause Analytics",
    "Round Midnight") are not read as cues."""
    out, last = [], 0
    for mention in sorted(mentions, key=lambda m: m.start):
        if mention.start < last:
            continue
        out += [text[last : mention.start], placeholder]
        last = mention.end
    out.append(text[last:])
    return "".join(out)


def _known(text: str, names: Iterable[str]) -> list[Mention]:
    out = []
    for name in names:
        if len(name) < 2:
            continue
        out += [Mention(m.group(0), m.start(), m.end(), "known") for m in _name_pattern(name).finditer(text)]
    return out


@functools.lru_cache(maxsize=4096)
def _name_pattern(name: str) -> re.Pattern[str]:
    # Kept apart from the regex module's own cache (512 patterns), which a graph's many names
    # would keep evicting: the same names are asked about again and again.
    return re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.IGNORECASE)


def _is_identifier(word: str) -> bool:
    parts = word.split("-")
    if any(p.isdigit() for p in parts) and len(parts) == 2 and parts[0] in _COMPOUND_FIRST:
        return False
    return parts[0] not in _COMPOUND_FIRST and parts[-1] not in _COMPOUND_LAST


def _name_word(bare: str, *, first: bool, text: str = "", end: int = 0) -> bool:
    """Whether a word can be part of a name; `first`: can start one; `text`, `end`: where the
    word ends in its text ("New" is a time word only in "New Year": "New York" is a name).
    Read in place, not sliced: this runs for every word of a long memory."""
    lowered = bare.lower()
    time_word = lowered in TIME_WORDS and not (lowered == "new" and not text.startswith((" Year", " year"), end))
    if not _capitalised(bare) or time_word or bare == "I" or _CONTRACTION.search(bare):
        return False
    return not first or (lowered not in STARTERS and lowered not in INTERJECTIONS)


def _names(text: str, statement: bool = False, capitalised: frozenset[str] = frozenset()) -> list[Mention]:
    """Runs of capitalised words, split at possessives, without time words."""
    out: list[Mention] = []
    run: list[re.Match[str]] = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        bare = _bare(word)
        gap = text[run[-1].end() : match.start()] if run else ""
        if gap == "" and run and run[-1].group(0).endswith("."):
            gap = " "
        # A title's or an initial's full stop joins the name unless a new sentence starts there.
        after_stop = bool(run) and run[-1].group(0).endswith(".") and _opens_sentence(text, match.start())
        joined = run and gap == " " and not _possessive(run[-1].group(0)) and not after_stop
        if _name_word(bare, first=not run, text=text, end=match.end()):
            if joined or not run:
                run.append(match)
                continue
        elif joined and bare.lower() in _CONNECTORS and _next_capitalised(text, match.end()):
            run.append(match)
            continue
        out += _finish(text, run, statement, capitalised)
        run = []
        if _name_word(bare, first=True, text=text, end=match.end()):
            run.append(match)
    out += _finish(text, run, statement, capitalised)
    return out


def _finish(
    text: str, run: list[re.Match[str]], statement: bool = False, capitalised: frozenset[str] = frozenset()
) -> list[Mention]:
    while run and _bare(run[-1].group(0)).lower() in _CONNECTORS:
        run = run[:-1]
    if not run:
        return []
    start, end = run[0].start(), run[-1].start() + len(_bare(run[-1].group(0)))
    words = [_bare(m.group(0)) for m in run]
    if _opens_sentence(text, start) and len(words) == 1 and not _first_word_named(text, run[0], statement, capitalised):
        return []
    head = re.match(r" ([a-z]+)\b", text[end:]) if not _possessive(run[-1].group(0)) else None
    if head and head.group(1) in HEAD_NOUNS:
        end += len(head.group(0))
    elif len(words) == 1 and _acronym(words[0]):
        return []  # a bare acronym (DNS, CPU) is a thing's kind more often than its name
    return [Mention(text[start:end], start, end, "name")]


def _acronym(word: str) -> bool:
    """DNS, CPU, PRs: a short all-capitals word, maybe plural."""
    stem = word[:-1] if word.endswith("s") else word
    return stem.isupper() and len(stem) <= 5


def _first_word_named(text: str, match: re.Match[str], statement: bool, capitalised: frozenset[str]) -> bool:
    """Whether a single capitalised word opening a sentence is a name. In a question: when it
    is possessive, reports ("Ravi said") or heads a "topic:" line. In a statement, whose first
    word is most often its subject, a subject is a name when the memory capitalises it
    mid-sentence too, when a person's verb follows it ("Melanie said"), or when it is no
    ordinary English word (`word_prior.common_word`: "Caroline", "Postgres", not "Art",
    "Running", "Family") and is possessive, heads a "topic:" line or is followed by its verb."""
    word = _bare(match.group(0))
    after = text[match.end() :]
    if not statement:
        return _possessive(match.group(0)) or _reports(match.group(0), after) or _heads_topic(after)
    if word.lower() in capitalised:
        return True
    if word.lower() in _NOT_SUBJECT_NAMES:
        return False
    if _reports(match.group(0), after):
        return True
    if word_prior.common_word(word):
        return False
    return _possessive(match.group(0)) or _heads_topic(after) or _subject(after)


def _reports(word: str, after: str) -> bool:
    """ "Ravi said...": a person doing something (a plural noun would end in s)."""
    return not word.endswith("s") and _REPORTING_VERB.match(after) is not None


def _heads_topic(after: str) -> bool:
    return re.match(r"(?: [a-z][\w-]*){0,5}(?: on the \w+)?:", after) is not None


def _subject(after: str) -> bool:
    """Whether a statement's first word reads as its subject: followed by its verb, or by "and
    I" ("Anthony and I went")."""
    return _followed_by_verb(after) or re.match(r" (?:and|&) (?:I|me)\b", after) is not None


def _followed_by_verb(after: str) -> bool:
    """Whether the words of `after` read as a singular subject's verb ("went", "has", "also
    fixed", "loves"): a name followed by what it did, not an exclamation ("Wow!"), a thanks
    ("Thanks for..."), an adjective before its noun ("Sure thing") or a plural's verb ("Kids
    are")."""
    words = re.match(r"(?: [a-z][a-z'’]*){1,3}", after)
    if words is None:
        return False
    for word in words.group(0).split():
        if word in _VERB_ADVERBS or (word.endswith("ly") and len(word) > 4):
            continue
        if word in _FINITE_VERBS:
            return True
        if "'" in word or "’" in word or len(word) <= 3:
            return False
        return word.endswith("ed") or (word.endswith("s") and not word.endswith(("ss", "us", "is", "ous")))
    return False


def _opens_sentence(text: str, start: int) -> bool:
    before = text[max(0, start - sentences.WINDOW) : start].rstrip("\"'“‘( ")
    if before.endswith("."):
        return sentences.ends_sentence(before, text[start : start + sentences.WINDOW])
    return not before or _SENTENCE_END.search(before) is not None


def _possessive(word: str) -> bool:
    return word.endswith(("'s", "’s", "'", "’")) and len(word) > 2


def _bare(word: str) -> str:
    for suffix in ("'s", "’s", "'", "’"):
        if word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _capitalised(word: str) -> bool:
    return bool(word) and word[0].isupper()


def _next_capitalised(text: str, at: int) -> bool:
    return re.match(r" [A-Z]", text[at:]) is not None


def _dedupe(found: list[Mention]) -> list[Mention]:
    by_length = sorted(found, key=lambda m: (-(m.end - m.start), m.start))
    kept: list[Mention] = []
    seen: set[str] = set()
    for mention in by_length:
        key = mention.text.lower()
        if not key or key in seen:
            continue
        if any(k.start <= mention.start and mention.end <= k.end for k in kept):
            continue
        seen.add(key)
        kept.append(mention)
    return sorted(kept, key=lambda m: m.start)


def code_mentions(text: str) -> list[Mention]:
    """Code identifiers, paths and hyphenated identifiers in `text` ("render_report()",
    "core/report.py", "billing-api"), each once: the names a parser does not tell apart."""
    found: list[Mention] = []
    for pattern in _CODE:
        found += [Mention(m.group(0).rstrip("."), m.start(), m.end(), "code") for m in pattern.finditer(text)]
    found += [
        Mention(m.group(0), m.start(), m.end(), "code")
        for m in _HYPHENATED.finditer(text)
        if _is_identifier(m.group(0))
    ]
    return _dedupe(found)
