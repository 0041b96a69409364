"""A derived, memory-mapped copy of an embedded store's vectors, for exact vector search without
loading Chroma's approximate index.

Chroma stays the store of record. After a run that changed the vectors, a writer saves every
vector of the store beside hybrid.db in one file (`MATRIX_FILE`): float32 rows sorted by chunk
id, their norms, their source types, and the ids, after a small JSON header that records the
*stamp* of the store the rows were read from: the gate's write token and the stat signature of
the store's segment files (chinvex.storage.vector_signature). A search trusts the file only when
that stamp is the store's current one, read under the store's gate as a reader reads
(`current`), and the signature is also the one hybrid.db records: then the file holds exactly the
store's content. Any write to the store through chinvex changes the token, any write behind its
back changes the signature, and the file is then simply not used (a search never writes it).

The file is written to a temporary name and renamed over the old one, so a reader sees a whole
old file or a whole new one; a search that mapped the old one keeps reading it consistently.

Layout: `MAGIC`, a little-endian u32 header length, the JSON header, then at 64-byte aligned
offsets the float32 matrix (count x dimension), the float32 norms, the u8 source-type codes and
the ids (fixed-width bytes, ascending).
"""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from chinvex.storage.db import read_only_meta
from chinvex.storage.vector_signature import (
    SIGNATURE_META_KEY,
    Signature,
    folder_signature,
    parse_signature,
)

MATRIX_FILE = "vector_matrix.bin"
"""The file's name, in the folder of the context's hybrid.db (outside the signed store folder)."""
MAX_VECTORS = 300_000
"""Stores with more vectors get no matrix: an exhaustive product over each query then costs more
than the approximate index it replaces, and the file would hold a second copy of a large store."""
MAGIC = b"CHXVMAT1"
_ALIGN = 64
GATE_WAIT_SECONDS = 5.0
"""How long reading the stamp waits for a write in progress before the file is not used."""


@dataclass(frozen=True)
class Stamp:
    """What identifies one state of an embedded store's vectors."""

    token: str
    signature: Signature


@dataclass(frozen=True)
class Header:
    count: int
    dimension: int
    id_width: int
    source_types: list[str]
    stamp: Stamp
    embedder: str | None


class VectorMatrix:
    """One mapped matrix file: rows by chunk id, and exact-order candidate search."""

    def __init__(self, header: Header, path: Path, mapped: Mapping[str, Any]):
        self.header = header
        self.path = path
        self.vectors = mapped["vectors"]
        self.norms = mapped["norms"]
        self.types = mapped["types"]
        self.ids = mapped["ids"]

    def __len__(self) -> int:
        return self.header.count

    def positions(self, chunk_ids: Sequence[str]) -> list[tuple[str, int]]:
        """(chunk id, row) of each of `chunk_ids` the matrix holds."""
        import numpy as np

        if not chunk_ids or not self.header.count:
            return []
        wanted = [cid.encode() for cid in chunk_ids]
        keys = np.array(wanted, dtype=self.ids.dtype)
        rows = np.searchsorted(self.ids, keys)
        found = []
        for cid, raw, row in zip(chunk_ids, wanted, rows.tolist()):
            if row < self.header.count and self.ids[row] == raw:
                found.append((cid, row))
        return found

    def rows(self, chunk_ids: Sequence[str]) -> dict[str, Any]:
        """The stored vector of each of `chunk_ids` the matrix holds (float32 arrays)."""
        return {cid: self.vectors[row] for cid, row in self.positions(chunk_ids)}

    def candidates(self, query: Any, n: int, *, source_types: Sequence[str] | None = None,
                   rows: Sequence[int] | None = None) -> list[tuple[str, float]]:
        """The `n` rows with the highest float32 cosine to `query`, best first, among `rows`
        (all when None) of the given source types; callers rescore them exactly
        (chinvex.retrieval.exact), which fixes their order in every process."""
        import numpy as np

        if n <= 0 or not self.header.count:
            return []
        q = np.asarray(query, dtype=np.float32).ravel()
        q_norm = float(np.sqrt(np.dot(q, q))) or 1.0
        count = self.header.count
        if rows is not None and len(rows) * 4 < count:  # a few rows: gather them
            index = np.unique(np.asarray(rows, dtype=np.int64))
            scores = (self.vectors[index] @ q) / (_safe(self.norms[index]) * q_norm)
        else:  # most rows: one product over the whole mapping, then the wanted ones
            scores = (self.vectors @ q) / (_safe(self.norms) * q_norm)
            index = np.arange(count) if rows is None else np.unique(np.asarray(rows, dtype=np.int64))
            scores = scores if rows is None else scores[index]
        if source_types:
            codes = [self.header.source_types.index(t) for t in source_types if t in self.header.source_types]
            keep = np.isin(self.types[index], np.asarray(codes, dtype=np.uint8))
            index, scores = index[keep], scores[keep]
        if not len(index):
            return []
        if n < len(scores):
            top = np.argpartition(-scores, n - 1)[:n]
        else:
            top = np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.ids[index[i]].decode(), float(scores[i])) for i in top.tolist()]

    def touch(self) -> None:
        """Read every page of the file once (a cold process warms it on a spare core)."""
        import numpy as np

        step = 8192
        for start in range(0, self.header.count, step):
            np.add.reduce(self.vectors[start:start + step, 0])
        _ = self.ids[-1:] if self.header.count else None


def _safe(norms: Any) -> Any:
    """Norms with zeros replaced by one (a zero vector scores 0)."""
    import numpy as np

    return np.where(norms > 0, norms, np.float32(1.0))


def matrix_path(sqlite_path: str | Path) -> Path:
    """Where the matrix of the store whose hybrid.db is `sqlite_path` lives."""
    return Path(sqlite_path).parent / MATRIX_FILE


def _aligned(offset: int) -> int:
    return (offset + _ALIGN - 1) // _ALIGN * _ALIGN


def _layout(header: Header, start: int) -> dict[str, tuple[int, str, tuple[int, ...]]]:
    """Offset, dtype and shape of each array after a header ending at `start`."""
    n, d = header.count, header.dimension
    out: dict[str, tuple[int, str, tuple[int, ...]]] = {}
    offset = _aligned(start)
    for name, dtype, shape, size in (("vectors", "<f4", (n, d), 4 * n * d), ("norms", "<f4", (n,), 4 * n),
                                     ("types", "u1", (n,), n), ("ids", f"S{header.id_width}", (n,),
                                                                    header.id_width * n)):
        out[name] = (offset, dtype, shape)
        offset = _aligned(offset + size)
    return out


def read_header(path: Path) -> tuple[Header, int] | None:
    """The file's header and where it ends; None when absent or not a matrix file."""
    try:
        with path.open("rb") as handle:
            start = handle.read(len(MAGIC) + 4)
            if len(start) != len(MAGIC) + 4 or not start.startswith(MAGIC):
                return None
            (length,) = struct.unpack("<I", start[len(MAGIC):])
            data = orjson.loads(handle.read(length))
        stamp = Stamp(str(data["stamp"]["token"]), dict(data["stamp"]["signature"]))
        header = Header(int(data["count"]), int(data["dimension"]), int(data["id_width"]),
                        list(data["source_types"]), stamp, data.get("embedder"))
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return None
    return header, len(MAGIC) + 4 + length


_OPENED: dict[tuple[str, int, int, int], VectorMatrix] = {}
_OPENED_LOCK = threading.Lock()


def open_matrix(path: Path) -> VectorMatrix | None:
    """The mapped file (kept per process while the file is unchanged); None when absent,
    unreadable or shorter than its header says."""
    import numpy as np

    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (os.path.realpath(path), st.st_ino, st.st_mtime_ns, st.st_size)
    with _OPENED_LOCK:
        if key in _OPENED:
            return _OPENED[key]
    found = read_header(path)
    if found is None or found[0].count > MAX_VECTORS:
        return None
    header, end = found
    layout = _layout(header, end)
    last = layout["ids"]
    if st.st_size < last[0] + header.id_width * header.count:
        return None
    try:
        mapped = {name: (np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape)
                         if header.count else np.zeros(shape, dtype=dtype))
                  for name, (offset, dtype, shape) in layout.items()}
    except (OSError, ValueError):
        return None
    matrix = VectorMatrix(header, path, mapped)
    with _OPENED_LOCK:
        _OPENED.clear()  # an older version of the file is no longer wanted
        _OPENED[key] = matrix
    return matrix


def store_stamp(chroma_dir: str | Path) -> Stamp | None:
    """The store's current stamp, read under a shared hold of its gate (as a reader reads);
    None when the gate is busy for GATE_WAIT_SECONDS or the folder cannot be read."""
    from chinvex.storage.vector_gate import StoreGate

    folder = Path(chroma_dir)
    if not (folder / "chroma.sqlite3").is_file():
        return None
    try:
        gate = StoreGate(folder)
    except Exception:
        return None
    try:
        gate.acquire(exclusive=False, timeout=GATE_WAIT_SECONDS)
        try:
            token = gate.token().decode("ascii", "replace")
            signature = folder_signature(folder)
        finally:
            gate.release()
    except Exception:
        return None
    finally:
        gate.close()
    return None if signature is None else Stamp(token, signature)


def current(chroma_dir: str | Path | None, sqlite_path: str | Path, recorded: Signature | None,
            embedder: str | None) -> VectorMatrix | None:
    """The store's matrix when it holds exactly the store's current content: its stamp is the
    store's (read now under the gate), its signature is the one hybrid.db records (`recorded`),
    and its vectors are `embedder`'s. None otherwise (no file, stale, a server's store)."""
    if chroma_dir is None or recorded is None:
        return None
    path = matrix_path(sqlite_path)
    matrix = open_matrix(path)
    if matrix is None or matrix.header.embedder != embedder or matrix.header.stamp.signature != recorded:
        return None
    stamp = store_stamp(chroma_dir)
    return matrix if stamp is not None and stamp == matrix.header.stamp else None


def _recorded_read_only(sqlite_path: str | Path) -> tuple[Signature | None, str | None] | None:
    """hybrid.db's recorded store signature and embedder, read without migrating or writing
    anything; None when the file cannot be read."""
    meta = read_only_meta(sqlite_path, (SIGNATURE_META_KEY, "embedder"))
    if meta is None:
        return None
    return parse_signature(meta.get(SIGNATURE_META_KEY)), meta.get("embedder")


def warm(chroma_dir: str, sqlite_path: str) -> bool:
    """Map the store's matrix and read it through, when it is current (`current`); whether it
    was. For a cold process, which then never loads Chroma's index
    (chinvex.retrieval.cold_start)."""
    recorded = _recorded_read_only(sqlite_path)
    matrix = None if recorded is None else current(chroma_dir, sqlite_path, *recorded)
    if matrix is None:
        return False
    matrix.touch()
    return True


def describe(chroma_dir: str, sqlite_path: str) -> str:
    """One line on the matrix for `chinvex doctor`: current, stale or absent. Never a problem:
    a search reads Chroma whenever the matrix is not current, and the next writer's run
    rewrites it."""
    path = matrix_path(sqlite_path)
    if not path.exists():
        return "no vector matrix (searches read Chroma's index; the next ingest writes one)"
    recorded = _recorded_read_only(sqlite_path)
    if recorded is not None and current(chroma_dir, sqlite_path, *recorded) is not None:
        return "vector matrix current (searches score every vector from it)"
    return "vector matrix stale, not used (searches read Chroma's index; the next ingest rewrites it)"


def write(path: Path, ids: Sequence[str], vectors: Any, source_types: Sequence[str], stamp: Stamp,
          embedder: str | None) -> None:
    """Write a matrix file for `ids` (any order) with their vectors and source types, stamped
    `stamp`: to a temporary file, then renamed over `path`."""
    import numpy as np

    order = sorted(range(len(ids)), key=lambda i: ids[i])
    encoded = [ids[i].encode() for i in order]
    width = max((len(e) for e in encoded), default=1)
    types = sorted(set(source_types))
    if len(types) > 255:
        raise ValueError("more than 255 source types")
    matrix = (np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)[order] if len(ids)
              else np.zeros((0, 0), dtype=np.float32))
    header = Header(len(ids), int(matrix.shape[1]), width, types, stamp, embedder)
    body = orjson.dumps({"count": header.count, "dimension": header.dimension, "id_width": width,
                         "source_types": types, "embedder": embedder,
                         "stamp": {"token": stamp.token, "signature": stamp.signature}})
    start = MAGIC + struct.pack("<I", len(body)) + body
    layout = _layout(header, len(start))
    arrays = {
        "vectors": matrix,
        "norms": np.sqrt(np.einsum("ij,ij->i", matrix, matrix)).astype("<f4") if len(ids) else
        np.zeros(0, dtype="<f4"),
        "types": np.asarray([types.index(source_types[i]) for i in order], dtype=np.uint8),
        "ids": np.asarray(encoded, dtype=f"S{width}"),
    }
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("wb") as handle:
            handle.write(start)
            for name, (offset, dtype, _) in layout.items():
                handle.write(b"\0" * (offset - handle.tell()))
                handle.write(np.ascontiguousarray(arrays[name], dtype=dtype).tobytes())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def remove(sqlite_path: str | Path) -> None:
    """Delete the matrix file (a store too large for one, or replaced)."""
    matrix_path(sqlite_path).unlink(missing_ok=True)


def merged(previous: VectorMatrix | None, deleted: Iterable[str], added: Mapping[str, tuple[Any, str]]
           ) -> tuple[list[str], Any, list[str]]:
    """The rows of `previous` (None: an empty store) whose ids were neither deleted nor written
    again, plus `added` (id -> (vector, source type)): ids, vectors and source types for `write`."""
    import numpy as np

    gone = set(deleted) | set(added)
    count = previous.header.count if previous is not None else 0
    keep = [i for i, raw in enumerate(previous.ids.tolist()) if raw.decode() not in gone] if count else []
    ids = [previous.ids[i].decode() for i in keep] if previous is not None else []
    types = [previous.header.source_types[int(previous.types[i])] for i in keep] if previous is not None else []
    ids += list(added)
    types += [added[cid][1] for cid in added]
    parts = [np.asarray(previous.vectors[keep], dtype=np.float32)] if keep and previous is not None else []
    if added:
        parts.append(np.asarray([added[cid][0] for cid in added], dtype=np.float32))
    if not parts:
        return ids, np.zeros((0, 0), dtype=np.float32), types
    return ids, np.concatenate(parts) if len(parts) > 1 else parts[0], types
