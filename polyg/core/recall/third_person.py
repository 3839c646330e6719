"""What a speaker said, in the third person: "I run the clinic" told by Dr. Ines Moreau reads
"Dr. Ines Moreau runs the clinic" in an answer.

The parse says which verb agrees with "I": the finite verb of the clause whose subject it is,
tagged VBP (present, not third person) by the tagger; that verb takes the third person ("am" ->
"is", "have" -> "has", "run" -> "runs"), and so does a verb conjoined to it that shares its
subject ("I run the clinic and teach at the school"). A past tense ("was", "went") or a modal
("can", "will") reads the same for any person and is left as said. "I" one of several subjects
("my sister and I run a bakery") leaves the verb plural. Without the English pipeline (it failed
to load), the words are swapped and the verbs left as said.

Whether what a speaker said reads alone (`reads_alone`): an answer says who said a sentence only
when its meaning needs the speaker ("Greta: Our flour came from ...", "Sam: Went to the gym"),
not before one about someone else ("Marco teaches physics at ...").
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from polyg.errors import PolygError
from polyg.nlp.pipeline import pipeline

if TYPE_CHECKING:
    from spacy.tokens import Token

log = logging.getLogger(__name__)

_SUBJECT_DEPS = ("nsubj", "nsubjpass")
# The third person of the verbs English does not inflect by adding -s.
_IRREGULAR = {"be": "is", "have": "has", "do": "does", "go": "goes"}
# A contraction's clitic as a word ("I'm" -> "is" once "I" is a name).
_CLITICS = {"'m": "am", "'ve": "have", "'ll": "will", "'d": "would", "'s": "is", "'re": "are"}
_SIBILANT = re.compile(r"(?:s|x|z|ch|sh|o)$")
_CONSONANT_Y = re.compile(r"[^aeiou]y$")
_WORD_I = re.compile(r"\bI\b")


def in_third_person(said: str, speaker: str) -> str:
    """`said` (a speaker's own words) with "I", "me" and "my" as `speaker` and the verbs that
    agree with "I" in the third person."""
    if not _WORD_I.search(said) and not re.search(r"\b(?:[Mm]y|[Mm]e)\b", said):
        return said  # nothing in the first person: no parse needed
    try:
        doc = pipeline().parse(said)
    except (PolygError, OSError, ImportError) as error:  # the pipeline failed to load
        log.warning("third person without the English pipeline (%s): verbs left as said", error)
        return _swapped(said, speaker)
    agreeing = {verb.i for token in doc if _is_i(token) for verb in _agreeing_verbs(token)}
    out: list[str] = []
    for token in doc:
        text = token.text
        lower = token.lower_
        if _is_i(token):
            text = speaker
        elif lower in ("me",) and token.tag_ == "PRP":
            text = speaker
        elif lower == "my" and token.tag_ == "PRP$":
            text = f"{speaker}'s"
        elif token.i in agreeing:
            text = _third_person(token)
        elif lower.replace("\u2019", "'") in _CLITICS and token.i > 0 and _is_i(doc[token.i - 1]):
            # "I'll" -> "Tom will"; "I'd seen" -> "Tom had seen"
            text = "had" if token.head.tag_ == "VBN" and lower[-1] == "d" else _CLITICS[lower.replace("\u2019", "'")]
        if text != token.text and token.text[:1] in ("'", "\u2019") and out and not out[-1].endswith(" "):
            out.append(" ")  # a clitic said as a word is a word of its own
        out.append(text + token.whitespace_)
    return "".join(out)


# Words whose meaning is who said them, that the third person does not replace.
_SPEAKERS_WORDS = re.compile(r"\b(?:mine|myself|we|us|our|ours|ourselves|you|your|yours|yourself|yourselves)\b", re.I)
# Words that may stand for the subject ("it", "she", "this"): who they mean, the context says.
_STANDS_FOR = ("PRON", "DET")


def reads_alone(said: str) -> bool:
    """Whether `said` means the same whoever said it, so an answer need not say who did: no
    word the speaker gives its meaning ("we", "our", "you"), and a subject that names what it
    is about ("Marco teaches physics", "There is a leak"), not a pronoun ("She moved") nor
    left out ("Went to the gym"), in no exchange ("Wow Mel, ..."). Without the English
    pipeline: no (the speaker is said)."""
    if _SPEAKERS_WORDS.search(said) or not said.strip():
        return False
    try:
        doc = pipeline().parse(said)
    except (PolygError, OSError, ImportError) as error:  # the pipeline failed to load
        log.warning("no parse to tell a sentence's subject (%s): its speaker is said", error)
        return False
    root = next(iter(doc.sents)).root
    # A turn of a conversation ("Wow Mel, that painting's amazing!", "Thanks, Caroline, ..."): an
    # interjection or a name it is said to is the speaker's side of an exchange.
    if any(c.dep_ == "intj" or _said_to(c) for c in root.children):
        return False
    # The small model reads some subjects as a compound before the verb ("The search service
    # runs on ...": "service" a compound of "runs"): a noun there is the subject too.
    subjects = [
        c
        for c in root.lefts
        if c.dep_ in (*_SUBJECT_DEPS, "expl") or (c.dep_ == "compound" and c.pos_ in ("NOUN", "PROPN"))
    ]
    return bool(subjects) and not any(s.dep_ != "expl" and s.pos_ in _STANDS_FOR for s in subjects)


def _said_to(token: Token) -> bool:
    """A name the sentence is said to ("Mel" in "Wow Mel, that painting ..."): before its verb,
    set off by a comma (not a time: "every Tuesday")."""
    following = token.doc[token.i + 1] if token.i + 1 < len(token.doc) else None
    return (
        token.dep_ == "npadvmod"
        and token.pos_ == "PROPN"
        and token.i < token.head.i
        and following is not None
        and following.text == ","
    )


def _is_i(token: Token) -> bool:
    return token.text == "I" and token.tag_ == "PRP"


def _agreeing_verbs(subject: Token) -> list[Token]:
    """The verbs whose form agrees with `subject` ("I"): its clause's first finite verb when it
    is a present tense (VBP), and the verbs conjoined to that one which have no subject of
    their own."""
    if subject.dep_ not in _SUBJECT_DEPS or any(c.dep_ == "conj" for c in subject.children):
        return []
    head = subject.head
    # The first auxiliary, also before the subject in a question ("Do I need a visa?").
    auxiliaries = [c for c in head.children if c.dep_ in ("aux", "auxpass") and c.i < head.i]
    finite = auxiliaries[0] if auxiliaries else head
    if finite.tag_ != "VBP":
        return []  # a past tense or a modal: the same for every person
    out = [finite]
    if finite is head:
        out += [
            c
            for c in head.children
            if c.dep_ == "conj"
            and c.tag_ in ("VBP", "VB")
            and not any(g.dep_ in (*_SUBJECT_DEPS, "aux") for g in c.children)
        ]
    return out


def _third_person(verb: Token) -> str:
    """The verb's present tense third person singular, from its lemma ("carry" -> "carries")."""
    said = verb.text.replace("\u2019", "'")
    lemma = verb.lemma_.lower()
    if said.lower() in _CLITICS:
        lemma = {"'m": "be", "'re": "be", "'ve": "have"}.get(said.lower(), lemma)
    if lemma in _IRREGULAR:
        form = _IRREGULAR[lemma]
    elif _CONSONANT_Y.search(lemma):
        form = lemma[:-1] + "ies"
    elif _SIBILANT.search(lemma):
        form = lemma + "es"
    else:
        form = lemma + "s"
    return form[:1].upper() + form[1:] if said[:1].isupper() else form


def _swapped(said: str, speaker: str) -> str:
    """The words swapped without a parse (the verbs as said)."""
    value = re.sub(r"\b[Mm]y\b", f"{speaker}'s", said)
    for short, verb in (("m", "is"), ("ve", "has"), ("ll", "will"), ("d", "would")):
        value = re.sub(rf"\bI['\u2019]{short}\b", f"{speaker} {verb}", value)
    value = re.sub(r"\bI am\b", f"{speaker} is", value)
    value = re.sub(r"\bI\b(?!['\u2019])", speaker, value)
    return re.sub(r"\b[Mm]e\b", speaker, value)
