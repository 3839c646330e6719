"""The polyg exception tree.

Every failure a user can see is a `PolygError` with a 4-digit code (spec 001):
1xxx configuration, 2xxx store, 3xxx embedding, 4xxx MCP / parameters, 5xxx retrieval.
Foreign errors (redis, onnxruntime, httpx) are translated once, where they are caught,
with `raise ... from exc`, so the message a client reads never leaks a stack trace.
"""

from __future__ import annotations

from typing import Any


class PolygError(Exception):
    code: int = 4000

    def __init__(self, message: str, *, code: int | None = None, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details or {}

    def __str__(self) -> str:
        return self.message


class ConfigError(PolygError):
    code = 1003


class MissingConfigFile(ConfigError):
    code = 1001


class InvalidConfigFormat(ConfigError):
    code = 1002


class StoreError(PolygError):
    code = 2004


class StoreTimeout(StoreError):
    code = 2001


class StoreAuthError(StoreError):
    code = 2002


class IndexNotFound(StoreError):
    code = 2003


class StoreNotReady(StoreError):
    code = 2005


class IndexBuilding(StoreNotReady):
    """A write refused, before it was sent, while FalkorDB builds one of the graph's indexes:
    FalkorDB would hold it until the build ends (minutes on a large graph), and every read of
    the graph behind it. Nothing was written: the call can be made again."""


class ReplicasBehind(StoreError):
    """A write the primary applied but fewer replicas than `wait_replicas` confirmed in time."""

    code = 2006


class QueryTimedOut(StoreTimeout):
    """The database answered that a query ran past its TIMEOUT: it is reachable, unlike the
    other `StoreTimeout`s."""


class QueryMemoryExceeded(StoreError):
    """The database stopped a query that used more than its per-query memory capacity."""


class EmbeddingError(PolygError):
    code = 3001


class EmbeddingModelError(EmbeddingError):
    code = 3001


class TextEncodingError(EmbeddingError):
    code = 3002


class DimensionMismatch(EmbeddingError):
    code = 3003


class ServerError(PolygError):
    code = 4001


class InvalidParams(PolygError):
    code = 4002


class AccessDenied(PolygError):
    """The request's access key does not cover this project, or may not write (HTTP keys)."""

    code = 4003


class NotFound(PolygError):
    code = 4004


class PayloadTooLarge(InvalidParams):
    code = 4013


class QueryTooCostly(InvalidParams):
    """A caller's query (a template variable) went past its time or memory limit."""

    code = 4008


class UserQueryTimeout(QueryTooCostly, QueryTimedOut):
    """A template variable ran past its time limit: a 4xxx error (the caller's query, not the
    database, is at fault), and still a `StoreTimeout` for code that waits on queries."""

    code = 4008


class RetrievalError(PolygError):
    code = 5002


class EmptyQuery(RetrievalError):
    code = 5001
