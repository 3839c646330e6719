"""Results cut to the response budget (`limits.RESPONSE_BUDGET`), saying what was left out.

One mechanism for every toolset: a tool builds its whole result, then cuts one list field of
it to the first items that fit, and says so in the fields its output model has (`omitted` and
`note`, `has_more` and `next_offset`, or its own). The dispatcher only logs a result still over
the budget: a generic cut there could not say how to see the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from polyg.core import limits

# Room kept for what a tool adds after cutting (the note, paging fields, `degraded`).
MARGIN = 1_000


def keep_fitting(result: dict[str, Any], key: str, *, at_least_one: bool = False, room: int | None = None) -> int:
    """Cut `result[key]` to its first items so that `result` fits the budget (or `room`
    characters for the list); how many were left out. `at_least_one` keeps the first item even
    when it alone is larger, for paged results that must move on."""
    items: list[Any] = result[key]
    if room is None:
        room = limits.RESPONSE_BUDGET - MARGIN - limits.size({**result, key: []})
    shown = limits.fit(items, room)
    if at_least_one and items:
        shown = max(shown, 1)
    result[key] = items[:shown]
    return len(items) - shown


def share(result: dict[str, Any], places: list[tuple[dict[str, Any], str]]) -> tuple[int, int]:
    """Cut several lists inside `result` (each `holder[key]`) so that `result` fits the budget:
    in the order given, each keeps its first items that fit in the room the earlier ones left.
    How many items are shown, of how many."""
    whole = [holder[key] for holder, key in places]
    for holder, key in places:
        holder[key] = []
    room = limits.RESPONSE_BUDGET - MARGIN - limits.size(result)
    for (holder, key), items in zip(places, whole, strict=True):
        holder[key] = items
        keep_fitting(holder, key, room=max(room, 0))
        room -= limits.size(holder[key])
    return sum(len(holder[key]) for holder, key in places), sum(len(items) for items in whole)


def left_out(shown: int, total: int, how_to_see_more: str) -> str:
    return (
        f"Only {shown} of the {total} found are shown; {total - shown} were left out to keep "
        f"this result small: {how_to_see_more}"
    )


def capped(key: str, items: list[Any], how_to_see_more: Callable[[int], str] | str) -> dict[str, Any]:
    """`{key: items}` cut to the budget, with `omitted` and a `note` saying, given how many are
    shown, how to see the rest (for output models with `omitted` and `note` fields)."""
    result: dict[str, Any] = {key: items}
    omitted = keep_fitting(result, key)
    if omitted:
        shown = len(items) - omitted
        how = how_to_see_more if isinstance(how_to_see_more, str) else how_to_see_more(shown)
        result["omitted"] = omitted
        result["note"] = left_out(shown, len(items), how)
    return result


@dataclass(frozen=True)
class Page[T]:
    """One page of a paged listing: its items, the offset it began at, and whether more follow.

    The one place a toolset works out where the next page starts (`next_offset`) and what it
    tells the caller when the budget cut a page short (`note`)."""

    items: list[T]
    offset: int
    has_more: bool
    # How many items the page was cut by to fit the response budget (they start the next page).
    cut: int = 0

    @property
    def next_offset(self) -> int | None:
        return self.offset + len(self.items) if self.has_more else None

    def note(self, tool: str) -> str | None:
        """When the budget cut the page, what was left out and how to read on."""
        if not self.cut:
            return None
        shown = len(self.items)
        return left_out(shown, shown + self.cut, f"call {tool} again with offset {self.next_offset}.")


def fit_page(result: dict[str, Any], key: str, *, offset: int, has_more: bool, room: int | None = None) -> Page[Any]:
    """`result[key]`, one page of a listing from `offset`, cut to the budget (or to `room`
    characters): at least one item stays, so that paging on from `next_offset` always moves. A
    cut page has more to follow."""
    cut = keep_fitting(result, key, at_least_one=True, room=room)
    return Page(result[key], offset, has_more or cut > 0, cut)


# --- typed results -------------------------------------------------------------------------


class ShapeMismatch(TypeError):
    """A handler's result does not read back as its output model (a programming error)."""


def typed[M: BaseModel](model: type[M], value: dict[str, Any]) -> M:
    """`value`, a result built (and cut to the budget) as a dict, as the tool's output model:
    pydantic checks every field where the result is made, not only the client that reads it.
    A key the model does not declare, or a value it would read differently, is refused: the
    result the client gets (`plain`) is `value` exactly."""
    result = model.model_validate(value)
    if plain(result) != value:
        raise ShapeMismatch(f"{model.__name__}: the result does not read back as its output model.")
    return result


def plain(value: BaseModel | dict[str, Any] | str) -> dict[str, Any] | str:
    """What a handler's result is sent as: a model's fields that were set (a field the handler
    left out stays out, as it would in a dict), by their published names."""
    if isinstance(value, BaseModel):
        dumped: dict[str, Any] = value.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return dumped
    return value
