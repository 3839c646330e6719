"""Where a text's sentences end, for the rules that read one sentence at a time.

A sentence ends at every line break, and at ".", "!" or "?" followed by white space and a word
that can open a sentence: a capital letter, a digit, a quote or a bracket ("e.g. this" and
"the U.S. office" go on). A full stop inside a word or a number ("v1.2", "3.5", "Node.js") is
never an end, since no white space follows it.

A full stop after an initial ("J.", "J.K.", "U.S.", "e.g.", "a.m.") or a known abbreviation
("Dr.", "Mr.", "St.", "approx.") ends the sentence only when the next word is one that commonly
opens a sentence (a pronoun, an article, a conjunction: "The U.S. It was ...", "at 9 a.m. We
left"); otherwise the capitalised word after it is read as part of the same sentence, the rest
of a name ("J.K. Rowling", "Dr. Smith", "St. Louis"). So "I met Dr. Smith. He was late." is two
sentences (the end is after "Smith"), and a sentence that really ends on an abbreviation and is
followed by a name ("... by 9 a.m. Caroline called") is read as one.
"""

from __future__ import annotations

import re

# Abbreviations written with a final full stop, lower-cased: titles before a name, and a few
# that are often followed by a number or a name.
ABBREVIATIONS = frozenset(
    "mr mrs ms mx dr prof st mt sr jr rev fr gen col capt lt sgt gov sen rep hon pres "
    "vs etc approx est dept inc ltd corp ave blvd rd ft min mins hr hrs sec".split()
)
# Words that commonly open a sentence and are not names: after an abbreviation they start a
# new one ("The U.S. It was ...").
OPENERS = frozenset(
    "i i'm i've i'd i'll you he she it it's we they this that these those there here the a an "
    "my our your his her their its but and so or then also yet if when while after before since "
    "what who where why how which yes no not we're they're he's she's that's there's let's "
    "as at in on for with from by to of".split()
)
# How much text either side of a full stop decides whether it ends a sentence (an abbreviation
# and the word after it are short): long texts are not copied at every full stop.
WINDOW = 48
_GAP = re.compile(r"(?<=[.!?])\s+|\n\s*")
_LAST_WORD = re.compile(r"([A-Za-z](?:[A-Za-z]*|(?:\.[A-Za-z])*))\.$")
_INITIALS = re.compile(r"[A-Za-z](?:\.[A-Za-z])*")
_OPENING = re.compile(r"[A-Za-z]+(?:['’][a-z]+)?")


def split(text: str, *, any_start: bool = False) -> list[str]:
    """The sentences of `text`, stripped, without empty ones. `any_start`: whatever follows a
    full stop (not an abbreviation's) starts a sentence, as in terse notes ("uses redis.
    depends on postgres")."""
    out: list[str] = []
    start = 0
    for gap in _GAP.finditer(text):
        before, after = text[max(0, gap.start() - WINDOW) : gap.start()], text[gap.end() : gap.end() + WINDOW]
        if "\n" in gap.group(0) or ends_sentence(before, after, any_start):
            out.append(text[start : gap.start()])
            start = gap.end()
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


def ends_sentence(before: str, after: str, any_start: bool = False) -> bool:
    """Whether a sentence ends between `before` (ending in its punctuation) and `after` (what
    follows the white space after it); `WINDOW` characters of each are enough."""
    if not after:
        return True
    first = after[0]
    if abbreviated(before):
        opening = _OPENING.match(after)
        return first.isupper() and opening is not None and opening.group(0).lower() in OPENERS
    return first.isupper() or first.isdigit() or first in "\"“‘'([" or any_start


def abbreviated(before: str) -> bool:
    """Whether `before` ends with an initial or a known abbreviation and its full stop."""
    match = _LAST_WORD.search(before)
    if match is None or not _word_starts(before, match.start()):
        return False
    word = match.group(1)
    return word.lower() in ABBREVIATIONS or _INITIALS.fullmatch(word) is not None


def _word_starts(text: str, at: int) -> bool:
    return at == 0 or not (text[at - 1].isalnum() or text[at - 1] in ".-_/")
