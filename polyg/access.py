"""Who may call what over HTTP: access keys scoped to projects, read-only keys, rate limits.

The config file lists `access_keys`, each with a name (shown in logs; the key never is), the
projects it may use (a list, or `*` for every project), whether it may write, and optionally a
token bucket (`rate` tool calls a second, up to `burst` at once). The single `api_key` of
earlier versions keeps working as a key to everything, without a limit.

A request's key becomes a `Grant`, which the HTTP guard puts in the request's ASGI scope
(`GRANT_SCOPE_KEY`) and the tool dispatcher checks before it reads the arguments' data or
touches the store: a project the key does not cover, or a tool whose `readOnlyHint` is false
for a read-only key, is refused with 4003.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from polyg.errors import AccessDenied, InvalidParams
from polyg.names import PROJECT_ID, check_project_id
from polyg.store.names import short

GRANT_SCOPE_KEY = "polyg.grant"
# Shorter keys are guessable; 16 characters of a random token are far beyond that.
MIN_KEY_CHARS = 16
EVERY_PROJECT = "*"


class AccessKey(BaseModel):
    """One entry of `access_keys` in the config file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=PROJECT_ID.pattern)
    # The key itself, or its SHA-256 (hex) so that the config file need not hold the secret.
    key: SecretStr | None = None
    key_sha256: str | None = Field(default=None, pattern="^[0-9a-fA-F]{64}$")
    projects: list[str] | Literal["*"]
    write: bool = False
    rate: float | None = Field(default=None, gt=0)  # tool calls a second, refilled continuously
    burst: int | None = Field(default=None, ge=1)  # tool calls at once; default: the rate, at least 1

    @field_validator("projects")
    @classmethod
    def _projects(cls, value: list[str] | Literal["*"]) -> list[str] | Literal["*"]:
        if isinstance(value, list):
            if not value:
                raise ValueError("list at least one project, or '*' for every project")
            try:
                return [check_project_id(project) for project in value]
            except InvalidParams as exc:
                raise ValueError(exc.message) from None
        return value

    @model_validator(mode="after")
    def _one_secret(self) -> AccessKey:
        if (self.key is None) == (self.key_sha256 is None):
            raise ValueError(f"access key {self.name!r}: give either key or key_sha256")
        if self.key is not None and len(self.key.get_secret_value()) < MIN_KEY_CHARS:
            raise ValueError(f"access key {self.name!r}: the key needs at least {MIN_KEY_CHARS} characters")
        if self.burst is not None and self.rate is None:
            raise ValueError(f"access key {self.name!r}: burst needs a rate")
        return self

    @property
    def digest(self) -> bytes:
        if self.key is not None:
            return sha256(self.key.get_secret_value())
        assert self.key_sha256 is not None
        return bytes.fromhex(self.key_sha256)


def sha256(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def check_unique(keys: list[AccessKey], api_key: str | None) -> None:
    """Two entries with one name or one secret would make logs or grants ambiguous."""
    names = [k.name for k in keys]
    if len(set(names)) < len(names):
        raise ValueError(f"access key names must be unique: {sorted({n for n in names if names.count(n) > 1})}")
    digests = [k.digest for k in keys] + ([sha256(api_key)] if api_key else [])
    if len(set(digests)) < len(digests):
        raise ValueError("two access keys (or an access key and api_key) have the same secret")


class TokenBucket:
    """`rate` tokens a second up to `burst`; a tool call takes one. Monotonic time, one event loop."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._tokens = float(burst)
        self._at = time.monotonic()

    def take(self) -> float:
        """0 when a token was taken, else the seconds until one is there (nothing is taken)."""
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return 0.0
        return (1 - self._tokens) / self.rate


@dataclass(frozen=True)
class RateLimited:
    key_name: str
    rate: float
    burst: int
    retry_after_s: float

    @property
    def retry_after_header(self) -> str:
        """Retry-After is whole seconds; rounded up so that a client waiting that long gets in."""
        return str(max(1, math.ceil(self.retry_after_s)))

    @property
    def message(self) -> str:
        return (
            f"Rate limit reached for key {self.key_name!r} ({self.rate:g} tool calls/s, burst {self.burst}); "
            f"retry after {self.retry_after_s:.1f} s."
        )


@dataclass(frozen=True)
class Grant:
    """What one request may do. `name` is None for a server without keys and for stdio."""

    name: str | None
    projects: frozenset[str] | None  # None: every project
    write: bool
    bucket: TokenBucket | None = field(default=None, compare=False)

    @property
    def every_project(self) -> bool:
        return self.projects is None

    def allows(self, project: Any) -> bool:
        return self.projects is None or (isinstance(project, str) and project in self.projects)

    def denial(self, project: Any) -> str:
        return f"Access denied: key {self.name!r} may not use project {short(str(project))}."

    def check(self, tool: str, read_only: bool, project: Any) -> None:
        """Raise AccessDenied (4003) unless this grant covers `tool` in `project` (the raw
        `project_id` argument with the server's default filled in: any value, as it comes)."""
        if not self.allows(project):
            raise AccessDenied(self.denial(project))
        if not read_only and not self.write:
            raise AccessDenied(f"Access denied: key {self.name!r} is read-only and {tool} writes.")

    def over_limit(self) -> RateLimited | None:
        """Take a token for a tool call; what to answer when there was none."""
        if self.bucket is None:
            return None
        wait = self.bucket.take()
        if not wait:
            return None
        assert self.name is not None
        return RateLimited(self.name, self.bucket.rate, self.bucket.burst, wait)


# stdio, and HTTP on a server with no key: the user's own process, which may do anything.
FULL_ACCESS = Grant(name=None, projects=None, write=True)
# An HTTP request the guard did not stamp (a route added without it): refused, not let through.
NO_ACCESS = Grant(name="(none)", projects=frozenset(), write=False)
LEGACY_KEY_NAME = "api_key"


def grant_for(key: AccessKey) -> Grant:
    projects = None if key.projects == EVERY_PROJECT else frozenset(key.projects)
    bucket = None
    if key.rate is not None:
        bucket = TokenBucket(key.rate, key.burst or max(1, math.floor(key.rate)))
    return Grant(name=key.name, projects=projects, write=key.write, bucket=bucket)


class AccessPolicy:
    """The keys a server accepts, each with its grant (and its bucket, shared by its sessions)."""

    def __init__(self, api_key: str | None, keys: list[AccessKey]) -> None:
        self._grants: list[tuple[bytes, Grant]] = [(k.digest, grant_for(k)) for k in keys]
        if api_key:
            self._grants.append((sha256(api_key), Grant(name=LEGACY_KEY_NAME, projects=None, write=True)))

    @property
    def keyed(self) -> bool:
        """Whether requests need a key (else everyone gets FULL_ACCESS)."""
        return bool(self._grants)

    def grant(self, headers: Mapping[str, str]) -> Grant | None:
        """The grant of the request's bearer key; None when it has none that is accepted."""
        if not self.keyed:
            return FULL_ACCESS
        scheme, _, supplied = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not supplied.strip():
            return None
        digest = sha256(supplied.strip())
        found = None
        for known, grant in self._grants:  # every entry compared, in constant time each
            if hmac.compare_digest(digest, known):
                found = grant
        return found


def grant_of_request(request: Any) -> Grant:
    """The grant the HTTP guard stamped on a tool call's request; stdio calls have no request."""
    if request is None:
        return FULL_ACCESS
    scope = getattr(request, "scope", None)
    grant = scope.get(GRANT_SCOPE_KEY) if isinstance(scope, dict) else None
    return grant if isinstance(grant, Grant) else NO_ACCESS
