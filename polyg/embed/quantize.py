"""A faster copy of the MiniLM model: int8 matrix products, derived once and cached on disk.

The pinned model stores its weights as int8 but multiplies in float32: onnxruntime folds the
weights back to float32 when it loads the model, so every product runs as a float32 GEMM.
Quantising the activations as well (dynamic quantisation, per output channel) lets the CPU's
int8 dot-product instructions do the work, with cosine >= 0.995 to the pinned model's vectors.
It is faster by a factor that depends on the CPU's int8 kernels, and the float32 weights are
never loaded. Each layer's second feed-forward product stays float32: its input (after GELU) has
outliers that one int8 scale resolves badly, and per-tensor weight scales lose too much.
Activations are quantised with one scale per model call, so a text embedded in a batch would
get a vector that depends on the other texts: the copy embeds one text per call
(polyg.embed.minilm runs several calls in parallel). The figures behind these choices are in
bench/notes/2026-11-27-measured-choices.md.

The copy is derived from the verified pinned file by onnxruntime's own tools, deterministically,
and cached under the user's cache directory keyed by the source checksum and the versions of the
tools, so it is made once per machine (~3 s, in the background of the server's start). A copy
whose checksum does not match the one recorded beside it is made again.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from polyg.cachedir import default_cache_dir
from polyg.checksum import cached_sha256, file_sha256

log = logging.getLogger(__name__)

# Bump when the recipe below changes, so cached copies made the old way are not reused.
RECIPE = "dynamic-int8-per-channel-keep-down-projections-v2"


def _tool_versions() -> str:
    # Read from the installed metadata: importing onnx costs ~0.2 s, needed only to derive.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"ort{version('onnxruntime')}-onnx{version('onnx')}"
    except PackageNotFoundError as exc:
        raise ImportError(f"cannot derive the int8 model without {exc.name}") from exc


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock beside `path`: two servers starting at once derive the copy once."""
    with open(path.with_suffix(".lock"), "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _valid(model: Path) -> bool:
    sidecar = model.with_suffix(".sha256")
    try:
        recorded = sidecar.read_text().strip()
        # Hashed once per machine while the copy stays untouched (polyg.checksum's stamps).
        return model.is_file() and cached_sha256(model, recorded) == recorded
    except OSError:
        return False


def quantized_copy(source: Path, source_sha256: str, cache_dir: Path | None = None) -> Path:
    """Path of the dynamic-int8 copy of `source` (whose checksum the caller verified), made if needed.

    Raises ImportError when the `onnx` package is missing and OSError when the cache directory
    cannot be written; the caller then runs the pinned model as it is."""
    key = hashlib.sha256(f"{source_sha256}:{RECIPE}:{_tool_versions()}".encode()).hexdigest()[:16]
    folder = cache_dir or default_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"minilm-{key}.onnx"
    if _valid(target):
        return target
    with _locked(target):
        if _valid(target):  # another process made it while we waited
            return target
        _derive(source, target)
    return target


def _derive(source: Path, target: Path) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # The quantiser logs advice ("consider pre-processing") through the root logger.
    quant_log = logging.getLogger()
    previous = quant_log.level
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        folded = Path(work) / "folded.onnx"
        # Basic optimisation folds the int8 -> float32 weight casts into float32 constants
        # (standard ONNX operators only), which the quantiser then re-quantises per channel.
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
        partial = Path(work) / "quantized.onnx"
        quant_log.setLevel(logging.ERROR)
        try:
            quantize_dynamic(
                folded,
                partial,
                weight_type=QuantType.QInt8,
                per_channel=True,
                nodes_to_exclude=_down_projections(folded),
            )
        finally:
            quant_log.setLevel(previous)
        digest = file_sha256(partial)
        os.replace(partial, target)
        target.with_suffix(".sha256").write_text(digest + "\n")
    log.info("derived the int8 MiniLM model", extra={"path": str(target)})


def _down_projections(model_path: Path) -> list[str]:
    """Names of the products whose constant weight maps a wider space to a narrower one: in a
    BERT layer, the feed-forward output (1536 -> 384 in MiniLM)."""
    import onnx

    model = onnx.load(str(model_path), load_external_data=False)
    shapes = {init.name: tuple(init.dims) for init in model.graph.initializer}
    names = []
    for node in model.graph.node:
        weights = [shapes[name] for name in node.input if name in shapes and len(shapes[name]) == 2]
        if node.op_type == "MatMul" and weights and weights[0][0] > weights[0][1]:
            names.append(node.name)
    return names
