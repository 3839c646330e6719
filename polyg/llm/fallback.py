"""LLM first, rules on any failure: the one shape every LLM-backed capability has.

A capability (the recall classifier, the synthesiser, extraction) is a protocol with two
implementations taking the same arguments: the rule-based one, always there, and an LLM one.

    classify = with_fallback(llm_classifier.classify if llm else None, rules_classifier.classify)
    plan = await classify(query)                 # the value
    answer = await classify.run(query)           # the value, who gave it, and why not the LLM

With no LLM configured the rules answer directly. Any `LLMError` (HTTP error, timeout,
refusal, invalid JSON, schema mismatch) or a timeout of the whole call makes the rules answer
and is logged (without credentials); other exceptions are bugs and propagate.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from polyg.llm.errors import LLMError, LLMTimeout

log = logging.getLogger("polyg.llm")


@dataclass(frozen=True)
class Answer[T]:
    value: T
    source: Literal["llm", "rules"]
    # Why the rules answered although an LLM is configured; None otherwise.
    llm_error: LLMError | None = None


class Fallback[**P, T]:
    def __init__(
        self,
        llm: Callable[P, Awaitable[T]] | None,
        rules: Callable[P, Awaitable[T] | T],
        *,
        name: str = "",
        timeout_s: float | None = None,
    ) -> None:
        self.llm = llm
        self.rules = rules
        self.name = name or getattr(rules, "__qualname__", "call")
        self.timeout_s = timeout_s

    async def run(self, *args: P.args, **kwargs: P.kwargs) -> Answer[T]:
        error: LLMError | None = None
        if self.llm is not None:
            try:
                async with asyncio.timeout(self.timeout_s):
                    return Answer(await self.llm(*args, **kwargs), "llm")
            except TimeoutError:
                error = LLMTimeout(f"{self.name}: the LLM gave no answer within {self.timeout_s:g} s")
            except LLMError as exc:
                error = exc
            log.warning("%s: LLM failed (%s: %s); answering with the rules", self.name, type(error).__name__, error)
        result = self.rules(*args, **kwargs)
        value: T = await result if inspect.isawaitable(result) else result
        return Answer(value, "rules", error)

    async def __call__(self, *args: P.args, **kwargs: P.kwargs) -> T:
        return (await self.run(*args, **kwargs)).value


def with_fallback[**P, T](
    llm: Callable[P, Awaitable[T]] | None,
    rules: Callable[P, Awaitable[T] | T],
    *,
    name: str = "",
    timeout_s: float | None = None,
) -> Fallback[P, T]:
    """`rules` behind `llm`: see the module docstring."""
    return Fallback(llm, rules, name=name, timeout_s=timeout_s)
