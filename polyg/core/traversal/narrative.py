"""A path told in English from its relationship types (spec 000 `find_relationship_paths`):
"Miles Davis was influenced by Charlie Parker, who collaborated with Dizzy Gillespie".

Each hop is a phrase for its type in the direction it was travelled. The spec's initial types
have their own phrases both ways (travelling INFLUENCED_BY backwards reads "influenced"); any
other type is read from its name: `WORKS_AT` -> "works at", a `..._BY` type travelled backwards
drops its "by" (`OWNED_BY` -> "owned"), a `..._WITH` type reads the same both ways, and any other
type travelled backwards reads "is <phrase> of" turned round ("is the target of works at").
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

# type -> (phrase travelled from source to target, phrase travelled from target to source)
PHRASES: dict[str, tuple[str, str]] = {
    "CHILD_OF": ("is a child of", "is a parent of"),
    "INFLUENCED_BY": ("was influenced by", "influenced"),
    "COLLABORATED_WITH": ("collaborated with", "collaborated with"),
    "EMPLOYED_BY": ("was employed by", "employed"),
    "LOCATED_IN": ("is located in", "contains"),
    "MEMBER_OF": ("is a member of", "has as a member"),
    "PART_OF": ("is part of", "includes"),
    "RESIDED_AT": ("resided at", "was home to"),
}


@dataclass(frozen=True)
class Step:
    type: str
    forward: bool
    to_name: str
    to_is_person: bool = False


def phrase(rel_type: str, forward: bool) -> str:
    known = PHRASES.get(rel_type)
    if known is not None:
        return known[0] if forward else known[1]
    words = rel_type.lower().replace("_", " ").strip() or "is related to"
    if forward:
        first = words.split()[0]
        # A participle leads a passive phrase: INFLUENCED_BY -> "was influenced by".
        return f"was {words}" if first.endswith("ed") and words.endswith(" by") else words
    if words.endswith(" with"):
        return words
    if words.endswith(" by"):
        return words.removesuffix(" by")
    return f"is the target of {words}"


def tell(start: str, steps: Sequence[Step]) -> str:
    """ "A <phrase> B, who <phrase> C, which <phrase> D" ("who" after a person)."""
    if not steps:
        return start
    parts = [f"{start} {phrase(steps[0].type, steps[0].forward)} {steps[0].to_name}"]
    for before, step in itertools.pairwise(steps):
        pronoun = "who" if before.to_is_person else "which"
        parts.append(f"{pronoun} {phrase(step.type, step.forward)} {step.to_name}")
    return ", ".join(parts)
