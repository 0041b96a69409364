"""The doctor tests' shared index: a small real index (real SQLite, real Chroma, the real
embedder) that each test damages the way a crash, a bug or a user could, then checks the report
before and after the repair. `chinvex doctor` runs as a real process where its exit codes, its
lock or a damaged store are the point, and in this process (helpers.run_cli_in_process) elsewhere.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from helpers import FIXTURES
from hostile import corpus as corpus_mod

SETUP_ONLY_ROLLOUT = (FIXTURES / "codex-rollout" / "generated-0.169.0" / "legacy" / "sessions" / "2026"
                      / "11" / "22" / "rollout-2026-11-22T02-29-41-01a20116-7f80-7e82-8754-e5125007d434.jsonl")


class Index:
    """A small real index: two code files, a note, a whitespace-only file, a ChatGPT export, a
    Codex rollout and a rollout with no turn yet (the last two kinds have no chunks by right)."""

    def __init__(self, base: Path):
        from chinvex.context.registry import Registry

        self.repo, self.notes, self.chat, self.codex = (base / n for n in ("repo", "notes", "chat", "codex"))
        for folder in (self.repo, self.notes, self.chat, self.codex):
            folder.mkdir(parents=True)
        (self.repo / "alpha.py").write_text(corpus_mod.python_module(corpus_mod.random.Random(1), "alphamarker", 3))
        (self.repo / "beta.py").write_text(
            "class ParseConfigError(Exception):\n    '''Raised by parseConfigFile.'''\n\n\n"
            "def parseConfigFile(path):\n    raise ParseConfigError(path)  # betamarker\n")
        (self.repo / "blank.txt").write_text("   \n\n\t\n")
        (self.notes / "idea.md").write_text("# Idea\n\nThe flux capacitor needs 1.21 gigawatts. ideamarker\n")
        corpus_mod.copy_file(corpus_mod.CHATGPT / "chatlore" / "conversations.json",
                             self.chat / "conversations.json")
        sessions = corpus_mod.ROLLOUTS / "localpush" / "sessions" / "2026" / "02" / "23"
        rollout = "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"
        corpus_mod.copy_file(sessions / rollout, self.codex / rollout)
        setup_only = SETUP_ONLY_ROLLOUT.read_bytes().splitlines(keepends=True)[0]
        (self.codex / SETUP_ONLY_ROLLOUT.name).write_bytes(setup_only)
        Registry().create("Doc", includes={
            "repos": [str(self.repo)], "note_roots": [str(self.notes)],
            "chat_roots": [str(self.chat)], "codex_session_roots": [str(self.codex)]})
        self.ingest()

    @property
    def config(self):
        from chinvex.context.registry import Registry

        return Registry().resolve("Doc")

    def ingest(self):
        from chinvex.ingest.pipeline import IngestOptions, run_ingest

        summary = run_ingest(self.config, IngestOptions())
        assert summary.status in ("completed", "completed_with_errors"), summary.errors
        return summary

    def conn(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.config.index.sqlite_path, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    def store(self):
        from chinvex.storage import db
        from chinvex.storage.vectors import VectorStore

        conn = db.connect(Path(self.config.index.sqlite_path))
        try:
            return VectorStore.open(self.config, conn, create=False)
        finally:
            conn.close()

    def doctor(self, repair: bool = False):
        from chinvex.doctor import diagnose

        report = diagnose("Doc", repair=repair)
        return report, {c.name: c for c in report.checks}

    def chunk_ids(self, where: str = "1", args: tuple = ()) -> list[str]:
        with self.conn() as conn:
            return [r[0] for r in conn.execute(
                f"SELECT c.chunk_id FROM chunks c JOIN documents d USING(doc_id) WHERE {where} "
                "ORDER BY c.chunk_id", args)]

    @staticmethod
    def problems(checks) -> dict[str, tuple]:
        """Status, message and examples of every check that is not ok."""
        return {name: (c.status, c.message, c.examples) for name, c in checks.items() if c.status != "ok"}

    @staticmethod
    def bad(checks) -> dict[str, str]:
        """The status of every check that is not ok."""
        return {name: c.status for name, c in checks.items() if c.status != "ok"}


@pytest.fixture
def index(tmp_path: Path, chinvex_home: Path) -> Index:
    return Index(tmp_path / "src")
