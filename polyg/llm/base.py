"""The LLM port: `complete_json(messages, schema)` returns an instance of a pydantic model
or raises an `LLMError`.

A provider only says how to build its HTTP request and where the answer is in the response;
this base class owns what they share: the overall time limit, retries of transient failures
(connection errors, HTTP 429 and 5xx) with backoff, reading JSON out of the answer, checking
it against the schema, and keeping the API key out of every message and repr.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar

from pydantic import BaseModel, ValidationError

from polyg.llm.errors import LLMError, LLMInvalidOutput, LLMTimeout, LLMUnavailable

if TYPE_CHECKING:
    import httpx  # imported where a request is made: a server without an LLM never loads it

log = logging.getLogger("polyg.llm")

M = TypeVar("M", bound=BaseModel)

DEFAULT_TIMEOUT_S = 20.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_MAX_TOKENS = 1000
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
MAX_RETRY_WAIT_S = 10.0
_EXCERPT_CHARS = 200


class Message(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: str


def schema_instruction(schema: type[BaseModel]) -> str:
    """Told to every model, including servers that ignore structured-output options."""
    return (
        "Answer with exactly one JSON object and nothing else (no prose, no code fences). "
        f"It must match this JSON Schema:\n{json.dumps(schema.model_json_schema(), separators=(',', ':'))}"
    )


class LLM(ABC):
    """One configured model behind one endpoint. Safe to share between concurrent tasks."""

    provider: str = "llm"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        retry_backoff_s: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.model_id = model
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.max_retries = max(0, max_retries)
        self.retry_backoff_s = max(0.0, retry_backoff_s)
        self._api_key = api_key or None
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    def __repr__(self) -> str:
        # Never the key: reprs end up in logs and tracebacks.
        return f"{type(self).__name__}(model={self.model_id!r}, base_url={self.base_url!r})"

    # -- what a provider supplies ---------------------------------------------------------

    @abstractmethod
    def _endpoint(self) -> str:
        """The URL requests are POSTed to."""

    @abstractmethod
    def _headers(self, api_key: str | None) -> dict[str, str]:
        """Request headers, credentials included."""

    @abstractmethod
    def _body(self, messages: Sequence[Message], schema: type[BaseModel], max_tokens: int) -> dict[str, Any]:
        """The JSON request body asking for one object matching `schema`."""

    @abstractmethod
    def _answer(self, payload: Any) -> str | dict[str, Any]:
        """The answer in a decoded response: JSON text, or an already decoded object.
        Raises LLMRefusal or LLMInvalidOutput."""

    # -- the port -------------------------------------------------------------------------

    async def complete_json(
        self, messages: Sequence[Message], schema: type[M], *, max_tokens: int = DEFAULT_MAX_TOKENS
    ) -> M:
        """Ask the model for one JSON object matching `schema`; raises an LLMError on any
        failure, after at most `timeout_s` seconds in all."""
        if not messages:
            raise ValueError("complete_json needs at least one message")
        body = self._body(messages, schema, max_tokens)
        try:
            async with asyncio.timeout(self.timeout_s):
                payload = await self._post_with_retries(body)
        except TimeoutError as exc:
            raise LLMTimeout(
                f"{self.provider} model {self.model_id!r} gave no answer within {self.timeout_s:g} s",
                details={"provider": self.provider, "model": self.model_id},
            ) from exc
        return self._validated(self._answer(payload), schema)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    # -- shared machinery -----------------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        # Made on first use so that configuring a provider never opens a connection. The
        # per-request timeout is the whole budget; asyncio.timeout bounds the retries.
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(
                timeout=self.timeout_s,
                headers={"User-Agent": "polyg", **self._headers(self._api_key)},
                transport=self._transport,
            )
        return self._client

    async def _post_with_retries(self, body: dict[str, Any]) -> Any:
        import httpx

        url = self._endpoint()
        attempt = 0
        while True:
            try:
                response = await self._http().post(url, json=body)
            except httpx.TimeoutException as exc:
                raise TimeoutError from exc
            except httpx.HTTPError as exc:
                failure: LLMError = LLMUnavailable(
                    f"{self.provider} endpoint {url} could not be reached: {type(exc).__name__}: "
                    f"{self._redact(str(exc))}",
                    details={"provider": self.provider, "url": url},
                )
                wait = None
            else:
                if response.status_code < 400:
                    return self._decode(response)
                failure = LLMUnavailable(
                    f"{self.provider} endpoint {url} answered HTTP {response.status_code}: "
                    f"{self._excerpt(response.text)}",
                    details={"provider": self.provider, "url": url, "status": response.status_code},
                )
                if response.status_code not in RETRY_STATUSES:
                    raise failure
                wait = _retry_after(response)
            if attempt >= self.max_retries:
                raise failure
            delay = wait if wait is not None else self.retry_backoff_s * 2**attempt
            log.info("%s call failed (%s); retry %d of %d", self.provider, failure, attempt + 1, self.max_retries)
            await asyncio.sleep(min(delay, MAX_RETRY_WAIT_S))
            attempt += 1

    def _decode(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            raise LLMInvalidOutput(
                f"{self.provider} endpoint sent a response that is not JSON: {self._excerpt(response.text)}",
                details={"provider": self.provider},
            ) from exc

    def _validated(self, answer: str | dict[str, Any], schema: type[M]) -> M:
        data = answer if isinstance(answer, dict) else self._json_object(answer)
        try:
            return schema.model_validate(data)
        except ValidationError as exc:
            # loc and msg only: pydantic's own text repeats the (possibly long) input.
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()[:5]
            )
            raise LLMInvalidOutput(
                f"{self.provider} answer does not match {schema.__name__}: {problems}",
                details={"provider": self.provider, "schema": schema.__name__, "errors": exc.error_count()},
            ) from exc

    def _json_object(self, text: str) -> Any:
        """The JSON object in `text`, tolerating code fences and prose around it."""
        stripped = _FENCE.sub("", text.strip()).strip()
        candidates = [stripped]
        first, last = stripped.find("{"), stripped.rfind("}")
        if 0 <= first < last:
            candidates.append(stripped[first : last + 1])
        for candidate in candidates:
            try:
                return json.loads(candidate)
            except ValueError:
                continue
        raise LLMInvalidOutput(
            f"{self.provider} answer is not JSON: {self._excerpt(text)}", details={"provider": self.provider}
        )

    def _excerpt(self, text: str) -> str:
        return self._redact(text[:_EXCERPT_CHARS].strip())

    def _redact(self, text: str) -> str:
        # Some servers echo the credential in their error body; it must not reach a log.
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return text


_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to the backoff
