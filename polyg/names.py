"""Identifiers: generated ids, and validation of every name that reaches Cypher unquoted.

Cypher cannot take labels or relationship types as parameters, so a relationship type or
label is interpolated into query text; these checks are what make that safe.
"""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime, timedelta

from polyg.errors import InvalidParams
from polyg.store.names import NAME, short, user_rel_type

PROJECT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")
# The same rule as a JSON Schema pattern for the tools' input schemas. `(?!.*\n)`: Python's `$`
# (which validators in Python use) also matches before a final newline; the check above does not.
PROJECT_ID_PATTERN = f"^(?!.*\\n){PROJECT_ID.pattern}$"
# Kept for callers that test a name without raising; `polyg.store.names` is the validator
# (`is_name`, `Label`, `RelType`) and holds the registry of polyg's own names.
TYPE_NAME = NAME
GRAPH_PREFIX = "polyg:"


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def timestamps(count: int) -> list[str]:
    """`count` increasing timestamps one microsecond apart, so items written together
    (observations of one entity) keep their order when sorted by time."""
    start = datetime.now(UTC)
    return [(start + timedelta(microseconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ") for i in range(count)]


def check_project_id(project_id: str) -> str:
    if not isinstance(project_id, str) or not PROJECT_ID.fullmatch(project_id):
        raise InvalidParams(
            f"Invalid project_id {short(project_id)}: use 1-64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit."
        )
    return project_id


def graph_key(project_id: str) -> str:
    return GRAPH_PREFIX + check_project_id(project_id)


def check_type_name(name: str, what: str = "relationship type") -> str:
    return user_rel_type(name, what)
