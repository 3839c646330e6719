"""Which of the graph's names a name means: the one rule by which remember's extraction writes
"Lena" as the entity "Lena Fischer", and by which recall reads "Lena" in a question as that
entity, so that what was merged on write is found on read.

A name means, in this order:
1. the known name with the same words, case and punctuation aside ("the auth service",
   "auth-service" for "Auth Service");
2. for a thing, the only known system whose name without its head noun it is ("Atlas" for
   "Atlas cluster");
3. for a single capitalised word (not a system's, a team's or a project's name, nor the
   speaker's), the known person-like name starting with it when it is the only known name
   of two or three capitalised words that does ("Lena" for "Lena Fischer"; with "Lena Park"
   known too, neither: a guess could merge two people);
4. else itself (a new entity on write, the resolver's other steps on read).

The known names are those the graph holds that share a word with the text
(`TemporalGraph.entity_candidates`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from polyg.core.memory.heads import NAME_HEADS, SERVICE_HEADS
from polyg.core.search.resolve import normalise

# Kinds of name a first name never stands for.
_NOT_FIRST_NAMES = frozenset({"Service", "Team", "Project", "Code", "Product"})


@dataclass(frozen=True)
class KnownNames:
    """The graph's names by the ways a text may call them (see the module docstring)."""

    by_words: dict[str, str] = field(default_factory=dict)
    first_names: dict[str, str] = field(default_factory=dict)
    systems: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, names: Iterable[str]) -> KnownNames:
        known = [n.strip() for n in names if n.strip()]
        return cls(_by_words(known), _first_names(known), _systems(known))

    def meant(self, name: str, kind: str | None = None, speaker: str | None = None) -> str:
        """The known name `name` means (typed `kind`, said by `speaker`), else `name` itself."""
        if not self.by_words:
            return name
        same = self.by_words.get(normalise(name))
        if same is not None:
            return same
        system = self.systems.get(name.lower())
        if system is not None and kind != "Person":
            return system
        # Whatever the tagger typed the lone word (it reads an unfamiliar first name as a place
        # or a company), but not a system's or a team's name.
        if kind not in _NOT_FIRST_NAMES and " " not in name and name[:1].isupper() and name != speaker:
            return self.first_names.get(name.lower(), name)
        return name


def _by_words(names: list[str]) -> dict[str, str]:
    """The names by their words: "auth service" and "auth-service" are "Auth Service"."""
    out: dict[str, str] = {}
    for name in names:
        out.setdefault(normalise(name), name)
    return out


def _first_names(names: list[str]) -> dict[str, str]:
    """The person-like names ("Alice Chen": two or three capitalised words, the last no head
    noun) by their first word, when no other known name of two or three capitalised words
    starts with it: "Lena" is neither "Lena Fischer" nor "Lena Park" when both are known,
    whether "Lena Park" is a person or a park."""
    starting: dict[str, set[str]] = {}
    for name in names:
        words = name.split()
        if 2 <= len(words) <= 3 and all(w[:1].isupper() and w.isalpha() for w in words):
            starting.setdefault(words[0].lower(), set()).add(name)
    return {
        first: only
        for first, found in starting.items()
        if len(found) == 1
        # "Berlin Marathon", "Acme Corp": no person
        and (only := next(iter(found))).split()[-1].lower() not in NAME_HEADS
    }


def _systems(names: list[str]) -> dict[str, str]:
    """The systems by their name without its head noun ("Atlas cluster" as "atlas"), when no
    other known system shortens to it: "migrated from Atlas" means the Atlas cluster."""
    found: dict[str, list[str]] = {}
    for name in names:
        words = name.split()
        if len(words) >= 2 and words[-1].lower() in SERVICE_HEADS and words[0][:1].isupper():
            found.setdefault(" ".join(words[:-1]).lower(), []).append(name)
    return {short: names_[0] for short, names_ in found.items() if len(set(names_)) == 1}
