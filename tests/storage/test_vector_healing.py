"""Issue 16, "self-healing vectors": hybrid.db decides which chunks exist and Chroma is derived
data, so a store that was lost, replaced or partly emptied is made whole again by the next
plain `chinvex ingest`, and the coverage figure search reads (`meta.vector_coverage`) says
how much of the index has vectors at every moment.

Real SQLite, real Chroma, the real built-in embedder and the real CLI.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import assert_no_traceback, run_cli, run_cli_in_process
from hostile import corpus as corpus_mod


CHROMA_LOADED = "any(m.startswith('chromadb') for m in sys.modules)"
"""Python that says whether a process loaded Chroma (chromadb, or its Rust bindings alone)."""


def _config():
    from chinvex.context.registry import Registry

    return Registry().resolve("Heal")


def _ids(config) -> tuple[set[str], set[str]]:
    """(chunk ids in hybrid.db, ids in Chroma)."""
    from chinvex.storage import consistency as cons
    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore

    conn = db.connect(Path(config.index.sqlite_path))
    try:
        store = VectorStore.open(config, conn, create=False)
        assert store is not None
        try:
            return cons.chunk_ids(conn), store.all_ids()
        finally:
            store.close()
    finally:
        conn.close()


def _coverage(config):
    from chinvex.storage import coverage, db

    conn = db.connect(Path(config.index.sqlite_path))
    try:
        return coverage.current_coverage(config, conn)
    finally:
        conn.close()


def _untrusted_by_search(config) -> bool:
    """Whether a search would distrust the recorded figure (a lost, replaced or since-written
    store) and count the store instead."""
    from chinvex.retrieval.coverage import from_record
    from chinvex.storage.coverage import gate_token

    return from_record(_coverage(config), vector_leg_ran=True, token_now=gate_token(config)) is None


@pytest.fixture
def healed(tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    for i, marker in enumerate(["alphamarker", "betamarker", "gammamarker"]):
        (repo / f"m{i}.py").write_text(corpus_mod.python_module(corpus_mod.random.Random(i), marker, 4))
    (repo / "notes.md").write_text("# Falconry\n\nThe gyrfalcon is the largest falcon.\n")
    # Set-up in this process (conftest.run_cli_in_process); the ingests under test are processes.
    assert run_cli_in_process("context", "create", "Heal", "--repo", str(repo)).code == 0
    first = run_cli_in_process("ingest", "--context", "Heal", "--json")
    assert first.code == 0, first
    return repo


def test_deleted_store_heals_on_the_next_plain_ingest(healed: Path):
    config = _config()
    chunks, vectors = _ids(config)
    assert chunks and chunks == vectors
    recorded = _coverage(config)
    assert recorded is not None and recorded.complete and recorded.chunks == len(chunks)
    assert not recorded.store_lost and not recorded.store_replaced

    shutil.rmtree(config.index.chroma_dir)
    gap = _coverage(config)
    assert gap is not None and gap.store_lost  # what search reads to warn during the gap
    searched = run_cli("search", "--context", "Heal", "gyrfalcon", "--json")
    assert searched.code == 0 and searched.json["results"]
    assert not Path(config.index.chroma_dir).exists()  # a search never creates an empty store

    again = run_cli("ingest", "--context", "Heal", "--json")
    assert_no_traceback(again)
    assert again.code == 0, again
    summary = again.json
    assert summary["chunks"]["vectors_healed"] == len(chunks)
    assert summary["chunks"]["with_vector"] == summary["chunks"]["total"] == len(chunks)
    assert any(f"no vector for {len(chunks)} of {len(chunks)} chunks" in w["message"]
               for w in summary["warnings"])
    chunks_after, vectors_after = _ids(config)
    assert chunks_after == vectors_after == chunks  # 100 % coverage
    healed_coverage = _coverage(config)
    assert healed_coverage.complete and not healed_coverage.store_lost
    assert not healed_coverage.store_replaced
    found = run_cli("search", "--context", "Heal", "largest falcon", "--mode", "vector", "--json")
    assert any("gyrfalcon" in r["text"] for r in found.json["results"])
    quiet = run_cli("ingest", "--context", "Heal", "--json").json
    assert quiet["chunks"]["embedded"] == 0 and not quiet["warnings"]


def test_replaced_store_is_reconciled(healed: Path, tmp_path: Path):
    """An older copy of the store put back (a restored backup): vectors of chunks that left
    are deleted, chunks added since get theirs."""
    config = _config()
    old_copy = tmp_path / "chroma-old"
    shutil.copytree(config.index.chroma_dir, old_copy)
    (healed / "m0.py").unlink()
    (healed / "m3.py").write_text(corpus_mod.python_module(corpus_mod.random.Random(9), "deltamarker", 3))
    assert run_cli_in_process("ingest", "--context", "Heal").code == 0  # set-up: the index moves on
    shutil.rmtree(config.index.chroma_dir)
    shutil.copytree(old_copy, config.index.chroma_dir)
    # The copy may get the deleted file's inode (same identity); its write token still tells
    # it apart, and search then counts the store instead of trusting the figure.
    assert _untrusted_by_search(config)

    result = run_cli("ingest", "--context", "Heal", "--json")
    assert result.code == 0, result
    chunks, vectors = _ids(config)
    assert chunks == vectors
    assert result.json["chunks"]["orphan_vectors_deleted"] > 0
    assert result.json["chunks"]["vectors_healed"] > 0


def test_restored_backup_with_the_same_chunk_count_is_compared_not_counted(healed: Path, tmp_path: Path):
    """A backup copied back that holds as many vectors as there are chunks, but for other
    chunks: equal counts must not pass for a whole store."""
    config = _config()
    old_copy = tmp_path / "chroma-old"
    shutil.copytree(config.index.chroma_dir, old_copy)
    before, _ = _ids(config)
    module = healed / "m1.py"
    module.write_text(module.read_text().replace("betamarker", "zetamarker"))  # same length
    assert run_cli_in_process("ingest", "--context", "Heal").code == 0  # set-up: the index moves on
    after, _ = _ids(config)
    assert len(after) == len(before) and after != before  # same count, other chunks
    # Copied over the live folder: chroma.sqlite3 keeps its inode, so only the write token
    # tells that the store went back in time.
    shutil.copytree(old_copy, config.index.chroma_dir, dirs_exist_ok=True)
    assert not _coverage(config).store_replaced and _untrusted_by_search(config)

    result = run_cli("ingest", "--context", "Heal", "--json")
    assert result.code == 0, result
    chunks, vectors = _ids(config)
    assert chunks == vectors == after
    assert result.json["chunks"]["orphan_vectors_deleted"] == len(before - after)
    assert result.json["chunks"]["vectors_healed"] == len(after - before)


def test_vectors_deleted_behind_ingests_back_come_back(healed: Path):
    """The store file is the same, but vectors went missing through another chinvex process
    (its write renewed the store's token): the next no-change ingest compares and embeds."""
    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore

    config = _config()
    chunks, _ = _ids(config)
    victims = sorted(chunks)[:3]
    conn = db.connect(Path(config.index.sqlite_path))
    try:
        store = VectorStore.open(config, conn, create=False)
        store.delete(victims)
        store.close()
    finally:
        conn.close()
    result = run_cli("ingest", "--context", "Heal", "--json")
    assert result.code == 0 and result.json["chunks"]["vectors_healed"] == 3, result
    assert _ids(config)[1] == chunks


def _segment_file(config, name: str) -> Path:
    """One file of the collection's on-disk vector segment (Chroma keeps it in a folder named
    after the segment, beside chroma.sqlite3)."""
    found = sorted(Path(config.index.chroma_dir).glob(f"*/{name}"))
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("damage", ["empty metadata", "half metadata", "empty header"])
def test_vector_segment_left_unreadable_by_a_kill_is_set_aside_and_rebuilt(healed: Path, damage: str):
    """Chroma rewrites its segment files in place: an ingest SIGKILLed while Chroma saved them
    left an empty `index_metadata.pickle` (found by the crash-safety test), and the next ingest
    failed with "free disk space" advice, as did `--full`, while doctor advised `--full`. Now
    search says how to rebuild, doctor calls it damage it can repair, and the next ingest that
    writes sets the folder aside (kept) and embeds every chunk again from hybrid.db."""
    config = _config()
    chunks, _ = _ids(config)
    name = "header.bin" if damage == "empty header" else "index_metadata.pickle"
    target = _segment_file(config, name)
    size = target.stat().st_size
    with target.open("r+b") as handle:
        handle.truncate(size // 2 if damage.startswith("half") else 0)

    searched = run_cli("search", "--context", "Heal", "gyrfalcon")
    assert_no_traceback(searched)
    assert searched.code == 0 and "gyrfalcon" in searched.stdout
    assert "doctor --context Heal --repair" in searched.stderr, searched.stderr
    checked = run_cli("doctor", "--context", "Heal", "--json")
    embedder = {c["name"]: c for c in checked.json["checks"]}["embedder"]
    assert embedder["status"] == "error" and embedder["repairable"], embedder
    assert "damaged" in embedder["message"] and "--full" not in embedder["message"]

    (healed / "notes.md").write_text("# Falconry\n\nThe gyrfalcon is the largest falcon; the merlin is small.\n")
    again = run_cli("ingest", "--context", "Heal", "--json")
    assert_no_traceback(again)
    assert again.code == 0, again
    kept = [p for p in Path(config.index.chroma_dir).parent.iterdir() if p.name.startswith("chroma.damaged-")]
    assert len(kept) == 1 and (kept[0] / target.relative_to(config.index.chroma_dir)).exists()
    assert any("could not be loaded" in w["message"] and str(kept[0]) in w["message"]
               for w in again.json["warnings"]), again.json["warnings"]
    chunks_after, vectors_after = _ids(config)
    assert chunks_after == vectors_after and len(chunks_after) == len(chunks)
    report = run_cli("doctor", "--context", "Heal", "--json")
    assert report.code == 0, report
    found = run_cli("search", "--context", "Heal", "small bird of prey", "--mode", "vector", "--json")
    assert found.code == 0 and not found.json["stats"]["warnings"], found.json["stats"]
    assert any("merlin" in r["text"] for r in found.json["results"])


def _overwrite_with_random_bytes(path: Path, seed: int) -> None:
    """Random bytes over the whole file, its size kept (a write from outside chinvex)."""
    import random

    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.write(random.Random(seed).randbytes(size))


@pytest.mark.parametrize("files", [("data_level0.bin", "header.bin", "link_lists.bin", "length.bin"),
                                   ("length.bin",)])
def test_random_bytes_in_the_vector_files_are_healed_by_a_no_change_ingest(healed: Path, files):
    """Issue 40: random bytes over the HNSW segment files (same sizes, chroma.sqlite3 and the
    write token untouched) once went unnoticed by an ingest with nothing to write, and search ran
    full-text only until some source changed. The files' stat signature tells the next plain
    ingest they changed; it opens the store, finds it unreadable (Chroma cannot load it, or, with
    only `length.bin` garbage, a stored vector no longer finds itself), sets it aside and
    rebuilds it from hybrid.db, saying so in one line."""
    config = _config()
    chunks, _ = _ids(config)
    for i, name in enumerate(files):
        _overwrite_with_random_bytes(_segment_file(config, name), seed=i)

    again = run_cli("ingest", "--context", "Heal")
    assert_no_traceback(again)
    assert again.code == 0, again
    said = [line for line in again.stdout.splitlines() + again.stderr.splitlines()
            if "unreadable" in line]
    assert len(said) == 1 and f"({len(chunks)} vectors)" in said[0], (again.stdout, again.stderr)
    assert "rebuilt the store from hybrid.db" in said[0]
    chunks_after, vectors_after = _ids(config)
    assert chunks_after == vectors_after == chunks  # full coverage
    assert _coverage(config).complete
    found = run_cli("search", "--context", "Heal", "largest falcon", "--mode", "vector", "--json")
    assert found.code == 0 and not found.json["stats"]["warnings"], found.json["stats"]
    assert any("gyrfalcon" in r["text"] for r in found.json["results"])
    quiet = run_cli("ingest", "--context", "Heal", "--json").json
    assert quiet["chunks"]["embedded"] == 0 and not quiet["warnings"]


def test_vector_files_changed_but_sound_are_checked_once_and_signed_again(healed: Path):
    """Files rewritten from outside with the same content (a restore by a copying tool) are
    opened and checked once, found sound, and the next no-change ingest is cheap again."""
    config = _config()
    target = _segment_file(config, "header.bin")
    target.write_bytes(target.read_bytes())  # same bytes, new mtime
    code = ("import sys\n"
            "from chinvex.context.registry import Registry\n"
            "from chinvex.ingest.pipeline import run_ingest\n"
            "s = run_ingest(Registry().resolve('Heal'))\n"
            f"print(s.chunks['embedded'], len(s.warnings), {CHROMA_LOADED})\n")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                           check=False)
            for _ in range(2)]
    assert all(out.returncode == 0 for out in runs), [out.stderr for out in runs]
    assert [out.stdout.split() for out in runs] == [["0", "0", "True"], ["0", "0", "False"]]
    assert not [p for p in Path(config.index.chroma_dir).parent.iterdir()
                if p.name.startswith("chroma.damaged-")]


def test_no_change_ingest_does_not_open_chroma(healed: Path, chinvex_home: Path):
    """The cheap check: with a complete figure for the store that is there, a run where nothing
    changed costs no Chroma start-up (neither chromadb nor its Rust bindings are imported)."""
    code = ("import sys\n"
            "from chinvex.context.registry import Registry\n"
            "from chinvex.ingest.pipeline import run_ingest\n"
            "s = run_ingest(Registry().resolve('Heal'))\n"
            f"print(s.sources.unchanged, {CHROMA_LOADED})\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    unchanged, imported = out.stdout.split()
    assert int(unchanged) == 4 and imported == "False", out.stdout


def test_a_search_leaves_the_next_no_change_ingest_cheap(healed: Path):
    """Every Chroma start-up writes `chroma.sqlite3` (a search's too), which is why the files'
    signature leaves that file out: after a vector search, a no-change ingest still does not
    load Chroma."""
    found = run_cli("search", "--context", "Heal", "largest falcon", "--mode", "vector", "--json")
    assert found.code == 0 and found.json["results"], found
    code = ("import sys\n"
            "from chinvex.context.registry import Registry\n"
            "from chinvex.ingest.pipeline import run_ingest\n"
            "s = run_ingest(Registry().resolve('Heal'))\n"
            f"print(s.sources.unchanged, {CHROMA_LOADED})\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["4", "False"], out.stdout


def test_coverage_is_kept_current_by_writes(healed: Path):
    """A write after the last measurement (an added file, or an MCP recall_add) keeps the
    figure right without a new comparison."""
    config = _config()
    (healed / "m4.py").write_text(corpus_mod.python_module(corpus_mod.random.Random(4), "epsmarker", 3))
    assert run_cli("ingest", "--context", "Heal").code == 0
    chunks, vectors = _ids(config)
    recorded = _coverage(config)
    assert (recorded.chunks, recorded.with_vector) == (len(chunks), len(vectors))


def test_adjusting_the_figure_is_exact_when_complete_and_never_hides_a_shortfall():
    from chinvex.storage.coverage import adjusted, measured

    full = measured(100, 100, "c@1:2")
    after = adjusted(full, added=10, removed=4, restored=0)
    assert (after.chunks, after.with_vector, after.store) == (106, 106, "c@1:2")
    short = measured(100, 60, "c@1:2")
    after = adjusted(short, added=10, removed=4, restored=5)
    assert (after.chunks, after.missing) == (106, 35)
    fresh = adjusted(measured(100, 0, None), added=10, removed=0, restored=0, store="c@1:3")
    assert (fresh.chunks, fresh.with_vector, fresh.store) == (110, 10, "c@1:3")
