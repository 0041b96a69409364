"""The built-in model's optimised graph, kept on disk so that a new process loads it quickly.

Creating an onnxruntime session for the default model spends most of its time optimising the
graph (the int8 weights are folded back into float matrices, operators are fused), the same work
in every process; a short `chinvex search` paid it every time. onnxruntime can save the graph it
optimised, with its weights in a separate file that it maps instead of parsing, and a session
made from that pair with optimisation turned off computes the same numbers.

So the first session made on a machine also saves its optimised graph in the cache folder
(`quantized.models_dir()`, beside the derived q8 model), and later sessions load that graph.
An entry is used only when everything it was made from is unchanged:
- its folder name holds the model's pinned sha256, the onnxruntime release and a digest of the
  CPU's identity and features (optimisations may depend on them);
- its manifest records the model file it was made from (path, size, modification time) and the
  sizes and modification times of the saved files;
- the graph file's sha256 and a checksum of the weight file (the sum of its 64-bit words, one
  pass over the mapped file at memory speed) must be the ones recorded. This
  guards against accidental damage, like the size and time checks; whoever can write the cache
  folder can equally replace the installed model.
An entry is published only after a session loaded from it gave, bit for bit, the output of the
session made from the model file on a probe (fixed token ids through every layer and weight
matrix), and entries are written into a scratch folder that is renamed into place, so
concurrent processes never see half an entry. Anything unexpected (no cache folder, a read-only one, another onnxruntime) falls
back to the ordinary load; `CHINVEX_SESSION_CACHE=0` turns the cache off.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import time
from pathlib import Path
from typing import Any, NamedTuple

import orjson

ENV_SWITCH = "CHINVEX_SESSION_CACHE"
GRAPH_FILE = "model.onnx"
WEIGHTS_FILE = "model.data"
MANIFEST_FILE = "manifest.json"
SCRATCH_PREFIX = ".building-"
SCRATCH_MAX_AGE_S = 600.0
"""A scratch folder older than this was left by a process that died while saving."""
PROBE_IDS = (101, 2023, 7584, 2003, 1037, 3231, 1997, 102)
"""[CLS], six ordinary WordPiece ids, [SEP]: a short row, but it goes through every layer and
every weight matrix."""


class Entry(NamedTuple):
    """A saved graph in its folder, and the digests its files must have."""

    folder: Path
    graph_sha256: str
    weights_checksum: str

    @property
    def graph(self) -> Path:
        return self.folder / GRAPH_FILE


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "").strip() not in ("0", "false", "no", "off")


def _cpu_identity() -> str:
    """The CPU's model and feature flags (Linux: /proc/cpuinfo), else what `platform` knows
    (`platform.processor()` starts a subprocess on Linux, so it is asked only elsewhere)."""
    parts = [platform.machine()]
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key = line.split(":", 1)[0].strip()
                if key in ("model name", "flags", "Features", "CPU implementer", "CPU part"):
                    parts.append(line.strip())
                elif not line.strip() and len(parts) > 1:
                    break  # the first processor's block is enough
    except OSError:
        parts.append(platform.processor())
    return "\n".join(parts)


def entry_folder(model_sha256: str, cache_dir: Path) -> Path:
    """Where the entry for this model file, onnxruntime release and CPU lives."""
    from chinvex.embedding.heavy_imports import load

    # Through the shared import lock: a cold search asks this on a thread while others import
    # numpy, and a plain import there could meet a half-imported module and miss the entry.
    load("onnxruntime")
    import onnxruntime

    cpu = hashlib.sha256(_cpu_identity().encode()).hexdigest()[:12]
    return cache_dir / "sessions" / f"{model_sha256[:16]}-ort{onnxruntime.__version__}-{cpu}"


def _stat_of(path: Path) -> dict[str, int]:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def find(source: Path, model_sha256: str, cache_dir: Path) -> Entry | None:
    """The usable entry for `source` (whose pinned sha256 is `model_sha256`), or None."""
    if not enabled():
        return None
    try:
        folder = entry_folder(model_sha256, cache_dir)
        manifest = orjson.loads((folder / MANIFEST_FILE).read_bytes())
        unchanged = (manifest.get("model_sha256") == model_sha256
                     and manifest.get("source") == {"path": str(source), **_stat_of(source)}
                     and all(manifest.get("files", {}).get(name) == _stat_of(folder / name)
                             for name in (GRAPH_FILE, WEIGHTS_FILE)))
        digests = (manifest.get("graph_sha256"), manifest.get("weights_checksum"))
    except (OSError, ValueError, ImportError, AttributeError, TypeError):
        return None
    if not unchanged or not all(isinstance(d, str) for d in digests):
        return None
    return Entry(folder, *digests)


def intact(entry: Entry) -> bool:
    """Whether the entry's files still have the digests recorded when it was made."""
    try:
        return (hashlib.sha256((entry.folder / GRAPH_FILE).read_bytes()).hexdigest() == entry.graph_sha256
                and weights_checksum(entry.folder / WEIGHTS_FILE) == entry.weights_checksum)
    except (OSError, ValueError):
        return False


def weights_checksum(path: Path) -> str:
    """The sum of the file's 64-bit words modulo 2**64 (trailing bytes count as one more word),
    in hex: one pass over the mapped file, and any changed byte changes it."""
    import mmap

    import numpy as np

    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        words = np.frombuffer(mapped, dtype=np.uint64, count=len(mapped) // 8)
        total = int(words.sum(dtype=np.uint64))
        del words  # the view must go before the mapping closes
        tail = int.from_bytes(mapped[len(mapped) // 8 * 8:], "little")
    return f"{(total + tail) % (1 << 64):016x}"


def discard(entry: Entry) -> None:
    """Remove an entry that failed its probe (it is made again by the next load)."""
    shutil.rmtree(entry.folder, ignore_errors=True)


def drop(scratch: Path) -> None:
    """Remove a scratch folder whose session could not be made."""
    shutil.rmtree(scratch, ignore_errors=True)


def probe_digest(session: Any) -> str:
    """sha256 of the graph's output for PROBE_IDS."""
    import numpy as np

    ids = np.asarray([PROBE_IDS], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    (hidden,) = session.run(["last_hidden_state"], feeds)
    return hashlib.sha256(np.ascontiguousarray(hidden, dtype=np.float32).tobytes()).hexdigest()


def scratch_folder(cache_dir: Path) -> Path | None:
    """A new folder to save an entry into, or None when the cache folder cannot be written.
    Scratch folders that dying processes left behind are removed on the way."""
    if not enabled():
        return None
    sessions = cache_dir / "sessions"
    try:
        sessions.mkdir(parents=True, exist_ok=True)
        for old in sessions.glob(f"{SCRATCH_PREFIX}*"):
            if time.time() - old.stat().st_mtime > SCRATCH_MAX_AGE_S:
                shutil.rmtree(old, ignore_errors=True)
        import tempfile

        return Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=sessions))
    except OSError:
        return None


def save_options(options: Any, scratch: Path) -> None:
    """Make the session being created with `options` save its optimised graph into `scratch`,
    weights in their own file (the form a later session maps quickly)."""
    options.optimized_model_filepath = str(scratch / GRAPH_FILE)
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name", WEIGHTS_FILE)
    options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")


def publish(scratch: Path, source: Path, model_sha256: str, reference: Any, load: Any) -> None:
    """Keep the graph saved in `scratch` if a session loaded from it (`load(path)`) reproduces
    `reference`'s probe output; otherwise, or on any failure, drop it. Never raises."""
    try:
        expected = probe_digest(reference)
        if not all((scratch / name).is_file() for name in (GRAPH_FILE, WEIGHTS_FILE)):
            return
        if probe_digest(load(scratch / GRAPH_FILE)) != expected:
            return
        manifest = {
            "model_sha256": model_sha256,
            "source": {"path": str(source), **_stat_of(source)},
            "files": {name: _stat_of(scratch / name) for name in (GRAPH_FILE, WEIGHTS_FILE)},
            "graph_sha256": hashlib.sha256((scratch / GRAPH_FILE).read_bytes()).hexdigest(),
            "weights_checksum": weights_checksum(scratch / WEIGHTS_FILE),
        }
        (scratch / MANIFEST_FILE).write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
        cache_dir = scratch.parent.parent
        if find(source, model_sha256, cache_dir) is not None:
            return  # another process published one for this file meanwhile: theirs is kept
        target = entry_folder(model_sha256, cache_dir)
        for other in scratch.parent.glob(f"{model_sha256[:16]}-*"):
            if other.name != target.name:  # this model's entries for another onnxruntime or CPU
                shutil.rmtree(other, ignore_errors=True)
        if target.exists():
            # One made from an older file: moved aside in one step, so that a process reading
            # the entry meanwhile never finds it half deleted (deleting it in place took long
            # enough for a `chinvex search` to miss it and pay a full load).
            aside = scratch.parent / f"{SCRATCH_PREFIX}replaced-{os.getpid()}-{time.time_ns()}"
            os.rename(target, aside)
            shutil.rmtree(aside, ignore_errors=True)
        os.rename(scratch, target)  # fails if another process published first: theirs is kept
    except Exception:
        pass
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
