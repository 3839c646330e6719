"""The `Embedder` contract every embedding provider implements.

Providers implement one blocking method, `embed_batch_sync`; the async conveniences run it
in a worker thread so that CPU-bound inference (MiniLM) or a slow HTTP call (OpenAI) never
blocks the server's event loop.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Sequence

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
        return await asyncio.to_thread(self.embed_batch_sync, list(texts))

    async def embed(self, text: str) -> list[float]:
        vectors = await self.embed_batch([text])
        return vectors[0]

    def embed_query_sync(self, text: str) -> list[float]:
        """The vector of a search query. Providers may run a faster approximation of the model
        here (MiniLM does); stored texts always go through `embed_batch_sync`."""
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
