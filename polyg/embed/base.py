"""The `Embedder` contract every embedding provider implements.

Providers implement one blocking method, `embed_batch_sync`; the async conveniences run it
in a worker thread so that CPU-bound inference (MiniLM) or a slow HTTP call (OpenAI) never
blocks the server's event loop.

Stored texts are embedded in the background (polyg.core.graph.vectorizer, imports): those threads
run at a lower CPU priority, so on a small machine they use idle cores and yield to the tool
calls being answered. Search queries, which a caller waits for, run at normal priority.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from polyg.errors import TextEncodingError


class Embedder(abc.ABC):
    """Turns texts into fixed-size float vectors.

    `model_id` names the model so stored vectors can be tied to the model that made them
    (vectors of two models must never be compared); `dimension` is the vector length.
    Every provider returns L2-normalised vectors, so cosine similarity is a dot product.
    Implementations must be safe to call from several worker threads at once.
    """

    model_id: str
    dimension: int

    @abc.abstractmethod
    def embed_batch_sync(self, texts: list[str]) -> list[list[float]]:
        """Embed `texts` in order, blocking; one vector of `dimension` floats per text."""

    async def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        # Empty in, empty out, without paying for a thread hop (or a model load).
        if not texts:
            return []
        if isinstance(texts, str):
            check_texts(texts)  # raises: a single str is a mistake, not a batch of letters
        return await asyncio.get_running_loop().run_in_executor(_background(), self.embed_batch_sync, list(texts))

    async def embed(self, text: str) -> list[float]:
        vectors = await self.embed_batch([text])
        return vectors[0]

    def embed_query_sync(self, text: str) -> list[float]:
        """The vector of a search query: the same model as stored texts, but run in the
        caller's thread at normal priority, since someone waits for it."""
        return self.embed_batch_sync([text])[0]

    async def embed_query(self, text: str) -> list[float]:
        if not isinstance(text, str):
            check_texts([text])  # raises, naming the problem
        return await asyncio.to_thread(self.embed_query_sync, text)

    # load/close are optional hooks, empty on purpose (hence not abstract): B027.
    def load(self) -> None:  # noqa: B027
        """Load eagerly whatever the first embed would otherwise load (no-op by default).

        The server calls this in the background at start so the first query is not slow.
        """

    def close(self) -> None:  # noqa: B027
        """Release resources (sessions, HTTP connections). Default: nothing to release."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self.model_id!r})"


def check_texts(texts: Sequence[object]) -> list[str]:
    """Return `texts` as a list of str, or raise TextEncodingError naming the bad item.

    Callers reach the embedders with data decoded from JSON; a None, a number or a lone
    surrogate ("\\ud800", which JSON allows) slipping through would otherwise surface as an
    obscure tokenizer or serialisation error, without saying which text was at fault.
    """
    if isinstance(texts, str):
        # A str is a Sequence[str] too: without this, "hello" would embed five letters.
        raise TextEncodingError("expected a list of texts to embed, got a single str")
    checked: list[str] = []
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise TextEncodingError(
                f"text #{position} to embed is a {type(text).__name__}, not a str",
                details={"position": position},
            )
        if not text.isascii():  # the common case skips the encode (and its copy)
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise TextEncodingError(
                    f"text #{position} to embed is not valid Unicode ({exc.reason} at index {exc.start})",
                    details={"position": position},
                ) from exc
        checked.append(text)
    return checked


# How much lower than the server's own threads background embedding runs (nice +10: under
# contention such a thread gets about a tenth of a core's time; on an idle core, all of it).
BACKGROUND_NICE = 10
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def lower_priority() -> None:
    """Lower the calling thread's CPU priority (Linux: per thread). Threads it starts inherit it."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)


async def run_in_background[A, R](fn: Callable[[A], R], arg: A) -> R:
    """`fn(arg)` in a background (low-priority) thread: work that no caller waits for."""
    return await asyncio.get_running_loop().run_in_executor(_background(), fn, arg)


def _background() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="polyg-embed", initializer=lower_priority)
        return _executor


def in_background_thread[T](fn: Callable[[], T]) -> T:
    """Run `fn` in a new low-priority thread and return its result: what it creates (an
    inference session's worker threads) inherits the lower priority."""
    with ThreadPoolExecutor(1, thread_name_prefix="polyg-embed-load", initializer=lower_priority) as one:
        return one.submit(fn).result()
