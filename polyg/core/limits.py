"""Input limits shared by every toolset: what a request may carry before it is refused.

Checked before anything is written, so a refused request changes nothing.
"""

from __future__ import annotations

from polyg.errors import InvalidParams, PayloadTooLarge

MAX_NAME = 512
MAX_TYPE = 128
MAX_TEXT = 16_384  # descriptions and observations
MAX_BATCH = 1_000  # observations or entities in one call
MAX_LIMIT = 1_000  # rows a read tool returns at most


def text(value: str, field: str, *, max_len: int, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidParams(f"{field} must be a string.")
    if not allow_empty and not value.strip():
        raise InvalidParams(f"{field} must not be empty.")
    if len(value) > max_len:
        raise PayloadTooLarge(f"{field} is {len(value)} characters long; the limit is {max_len}.")
    return value


def name(value: str, field: str = "name") -> str:
    return text(value, field, max_len=MAX_NAME)


def type_(value: str, field: str = "type") -> str:
    return text(value, field, max_len=MAX_TYPE)


def batch(items: list[str], field: str) -> list[str]:
    if len(items) > MAX_BATCH:
        raise PayloadTooLarge(f"{field} holds {len(items)} items; the limit is {MAX_BATCH}.")
    return [text(item, f"{field}[{i}]", max_len=MAX_TEXT) for i, item in enumerate(items)]


def limit(value: int, field: str = "limit") -> int:
    if not 1 <= value <= MAX_LIMIT:
        raise InvalidParams(f"{field} must be between 1 and {MAX_LIMIT}.")
    return value
