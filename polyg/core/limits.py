"""Input limits shared by every toolset: what a request may carry before it is refused, and
how much a response may carry.

Checked before anything is written, so a refused request changes nothing. The tools publish
the same limits in their input schemas (`schema_*` below), so the two cannot drift apart.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from polyg.errors import InvalidParams, PayloadTooLarge
from polyg.store.names import short

MAX_NAME = 512
MAX_TYPE = 128
MAX_TEXT = 16_384  # descriptions and observations
MAX_BATCH = 1_000  # observations or entities in one call
MAX_LIMIT = 1_000  # rows a read tool returns at most
# FalkorDB reads SKIP as a 32-bit count: 2^32 wraps to the first page.
MAX_OFFSET = 2**31 - 1

# A memory (`remember`) is stored as one text, its context then ': ' then its content, held to
# the limit of every stored text: the content's limit leaves room for the longest context, so a
# content the tool's schema accepts is never refused later as a too long "description". Here,
# not in polyg.core.memory.write, so that the tool's schema does not import the writer at start.
MAX_MEMORY_CONTEXT = 200
MAX_MEMORY_CONTENT = MAX_TEXT - MAX_MEMORY_CONTEXT - len(": ")
# What one `recall` returns by default and at most.
DEFAULT_RECALL_RESULTS = 10
MAX_RECALL_RESULTS = 100

# What one tool result may carry, in characters of its JSON (about 30k tokens): a client
# hands the whole result to a model, and the official memory server's read_graph reaching
# 50-80k tokens is what this guards against.
RESPONSE_BUDGET = 120_000
# Observations one entity shows in a result before the rest are left for paging.
OBSERVATIONS_SHOWN = 100

# Control characters (C0, DEL, C1): refused inside a name. NUL is refused in every text, as
# FalkorDB cannot take it in a query parameter.
_CONTROL = "\\x00-\\x1f\\x7f-\\x9f"
# Characters that show nothing: every whitespace character Python strips, and the zero-width
# and format characters that render as nothing. A name needs one character outside this set.
_INVISIBLE = (
    "\\x00-\\x20\\x7f-\\xa0\\xad\\u034f\\u061c\\u115f\\u1160\\u1680\\u17b4\\u17b5\\u180b-\\u180f"
    "\\u2000-\\u200f\\u2028-\\u202f\\u205f-\\u206f\\u3000\\u3164\\ufe00-\\ufe0f\\ufeff\\uffa0"
)
# One pattern, used by the check below and published in the input schemas (JSON Schema
# patterns are ECMA regexes: this one reads the same there as in Python).
NAME_PATTERN = f"^[^{_CONTROL}]*[^{_INVISIBLE}][^{_CONTROL}]*$"
TEXT_PATTERN = f"^[^\\x00]*[^{_INVISIBLE}][^\\x00]*$"
OPTIONAL_TEXT_PATTERN = "^[^\\x00]*$"
_CONTROL_CHAR = re.compile(f"[{_CONTROL}]")
_VISIBLE_CHAR = re.compile(f"[^{_INVISIBLE}]")
_SURROGATE = re.compile("[\\ud800-\\udfff]")


def _check_encodable(value: str, field: str) -> None:
    if "\x00" in value:
        raise InvalidParams(f"{field} must not contain a NUL character.")
    if _SURROGATE.search(value):
        raise InvalidParams(f"{field} holds a lone surrogate (not valid UTF-8).")


def text(value: str, field: str, *, max_len: int, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidParams(f"{field} must be a string.")
    if len(value) > max_len:
        raise PayloadTooLarge(f"{field} is {len(value)} characters long; the limit is {max_len}.")
    _check_encodable(value, field)
    if not allow_empty and not _VISIBLE_CHAR.search(value):
        raise InvalidParams(f"{field} must not be empty.")
    return value


def as_stored(value: str) -> str:
    """A name as `name` stores it (surrounding whitespace stripped, NFC), unchecked: the key to
    look a name up by, where a name that cannot be stored is merely not found."""
    return unicodedata.normalize("NFC", value.strip())


def name(value: str, field: str = "name") -> str:
    """An entity name as stored and looked up: surrounding whitespace stripped, NFC, no control
    characters, at least one visible character. Two inputs that differ only in surrounding
    whitespace or Unicode composition are the same name."""
    text(value, field, max_len=MAX_NAME)
    clean = as_stored(value)
    if _CONTROL_CHAR.search(clean):
        raise InvalidParams(f"{field} {short(value)} contains a control character.")
    if not _VISIBLE_CHAR.search(clean):
        raise InvalidParams(f"{field} {short(value)} has no visible character.")
    return clean


def identifier(value: str, field: str) -> str:
    """An id a caller names (entity, observation, relationship): looked up, never stored, so
    only what the store cannot take, or a runaway size, is refused; an unknown id is not found."""
    return text(value, field, max_len=MAX_NAME, allow_empty=True)


def relation_text(value: str, field: str = "relationType") -> str:
    return text(value, field, max_len=MAX_NAME)


def type_(value: str, field: str = "type") -> str:
    return text(value, field, max_len=MAX_TYPE)


def batch(items: list[str], field: str) -> list[str]:
    count(items, field)
    return [text(item, f"{field}[{i}]", max_len=MAX_TEXT) for i, item in enumerate(items)]


def count(items: list[Any], field: str) -> list[Any]:
    if len(items) > MAX_BATCH:
        raise PayloadTooLarge(f"{field} holds {len(items)} items; the limit is {MAX_BATCH}.")
    return items


def limit(value: int, field: str = "limit") -> int:
    if not 1 <= value <= MAX_LIMIT:
        raise InvalidParams(f"{field} must be between 1 and {MAX_LIMIT}.")
    return value


def offset(value: int, field: str = "offset") -> int:
    if not 0 <= value <= MAX_OFFSET:
        raise InvalidParams(f"{field} must be between 0 and {MAX_OFFSET}.")
    return value


def unique(items: list[str]) -> list[str]:
    """Items in their first order, each once: one rule for repeated observations everywhere."""
    return list(dict.fromkeys(items))


def size(value: Any) -> int:
    """Characters `value` takes in a result's JSON text (what the budget counts)."""
    return len(json.dumps(value, ensure_ascii=False))


def fit(items: list[Any], budget: int) -> int:
    """How many of `items`, from the first, fit in `budget` characters together."""
    used = 0
    for i, item in enumerate(items):
        used += size(item) + 2
        if used > budget:
            return i
    return len(items)


# --- what the input schemas publish --------------------------------------------------------


def schema_name() -> dict[str, Any]:
    return {"minLength": 1, "maxLength": MAX_NAME, "pattern": NAME_PATTERN}


def schema_identifier() -> dict[str, Any]:
    return {"maxLength": MAX_NAME, "pattern": OPTIONAL_TEXT_PATTERN}


def schema_relation_text() -> dict[str, Any]:
    return {"minLength": 1, "maxLength": MAX_NAME, "pattern": TEXT_PATTERN}


def schema_type() -> dict[str, Any]:
    return {"minLength": 1, "maxLength": MAX_TYPE, "pattern": TEXT_PATTERN}


def schema_text(*, allow_empty: bool = False) -> dict[str, Any]:
    if allow_empty:
        return {"maxLength": MAX_TEXT, "pattern": OPTIONAL_TEXT_PATTERN}
    return {"minLength": 1, "maxLength": MAX_TEXT, "pattern": TEXT_PATTERN}


def schema_list(items: dict[str, Any] | None = None) -> dict[str, Any]:
    extra: dict[str, Any] = {"maxItems": MAX_BATCH}
    if items:
        extra["items"] = items
    return extra
