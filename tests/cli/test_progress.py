"""An ingest is never silent (issue 41): a bar under a real pseudo-terminal, plain periodic lines
when piped, JSON lines with `--json --progress`, nothing with `--json` alone or `--quiet`. The
interval is shortened through CHINVEX_PROGRESS_EVERY so a small real ingest shows several."""

from __future__ import annotations

import json
import os
import pty
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chinvex.cli.progress import Counters, choose_mode, duration
from helpers import REPO_ROOT, assert_no_traceback, run_cli, run_cli_in_process


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(40):
        (notes / f"note{i:02d}.md").write_text(f"# Note {i}\n\n" + f"Paragraph {i} about ledgers and retries.\n" * 30,
                                               encoding="utf-8")
    env = {"CHINVEX_HOME": str(tmp_path / "home"), "CHINVEX_CONTEXT": "", "EDI_PROJECT_PATH": "",
           "CHINVEX_PROGRESS_EVERY": "0.1"}
    assert run_cli_in_process("context", "create", "prog", "--note-root", str(notes), env=env).code == 0
    return env


def test_piped_ingest_prints_periodic_plain_lines(env):
    result = run_cli("ingest", "--context", "prog", env=env)
    assert_no_traceback(result)
    lines = [line for line in result.stderr.splitlines() if line.startswith("ingest prog: ")]
    assert lines, result.stderr
    assert "sources ·" in lines[-1] and "chunks embedded" in lines[-1] and "elapsed" in lines[-1]
    assert "\x1b" not in result.stderr and "━" not in result.stderr  # no bar in a log
    assert result.stdout.startswith("prog: 40 ingested")


def test_json_progress_streams_objects_and_plain_json_stays_silent(env):
    streamed = run_cli("ingest", "--context", "prog", "--json", "--progress", env=env)
    events = [json.loads(line) for line in streamed.stderr.splitlines() if line.strip()]
    assert events and all(e["event"] == "progress" and e["context"] == "prog" for e in events)
    assert {"sources_done", "sources_total", "chunks_embedded", "eta_s"} <= set(events[-1])
    assert streamed.json["context"] == "prog"  # stdout: one document
    again = run_cli("ingest", "--context", "prog", "--full", "--json", env=env)
    assert again.stderr.strip() == "" and again.json["ok"] is True


def test_quiet_prints_nothing_on_success(env):
    result = run_cli("ingest", "--context", "prog", "--quiet", env=env)
    assert result.code == 0 and result.stdout == "" and result.stderr == "", result


def _in_terminal(env: dict[str, str], *args: str) -> tuple[int, str]:
    """The real CLI under a pseudo-terminal: its exit code and everything it drew."""
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "chinvex", *args],
                            stdin=child, stdout=child, stderr=child, cwd=REPO_ROOT,
                            env={**os.environ, **env, "TERM": "xterm-256color", "COLUMNS": "120"})
    os.close(child)
    seen = b""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    proc.wait(timeout=60)
    os.close(main)
    return proc.returncode, seen.decode("utf-8", "replace")


def test_a_terminal_gets_a_live_bar(env):
    """rich draws its bar (cursor movements, the bar)."""
    code, text = _in_terminal(env, "ingest", "--context", "prog")
    assert code == 0, text[-2000:]
    assert "ingest" in text and "sources ·" in text and "\x1b[" in text, text[-2000:]
    assert "prog: 40 ingested" in text


def test_export_import_and_repair_show_progress_on_a_terminal(env, tmp_path: Path):
    assert run_cli_in_process("ingest", "--context", "prog", "--quiet", env=env).code == 0  # set-up
    dump = tmp_path / "prog.jsonl"
    code, text = _in_terminal(env, "export", "--context", "prog", "--out", str(dump))
    assert code == 0 and "export prog: " in text and "\x1b[" in text, text[-2000:]
    assert run_cli_in_process("context", "create", "copy", env=env).code == 0
    code, text = _in_terminal(env, "import", str(dump), "--context", "copy")
    assert code == 0 and "import prog.jsonl into copy: " in text and "\x1b[" in text, text[-2000:]
    shutil.rmtree(Path(env["CHINVEX_HOME"]) / "indexes" / "prog" / "chroma")  # every vector lost
    code, text = _in_terminal(env, "doctor", "--context", "prog", "--repair")
    assert code == 0 and "doctor --repair prog: " in text and "\x1b[" in text, text[-2000:]


def test_a_piped_repair_prints_periodic_lines(env):
    assert run_cli_in_process("ingest", "--context", "prog", "--quiet", env=env).code == 0  # set-up
    shutil.rmtree(Path(env["CHINVEX_HOME"]) / "indexes" / "prog" / "chroma")
    result = run_cli("doctor", "--context", "prog", "--repair", env=env)
    assert_no_traceback(result)
    lines = [line for line in result.stderr.splitlines() if line.startswith("doctor --repair prog: ")]
    assert lines and "elapsed" in lines[-1], result.stderr
    assert "\x1b" not in result.stderr


def test_repair_reports_every_vector_it_writes(env, monkeypatch):
    from chinvex.cli.progress import Ticker
    from chinvex.doctor import diagnose

    assert run_cli_in_process("ingest", "--context", "prog", "--quiet", env=env).code == 0  # set-up
    shutil.rmtree(Path(env["CHINVEX_HOME"]) / "indexes" / "prog" / "chroma")
    monkeypatch.setenv("CHINVEX_HOME", env["CHINVEX_HOME"])
    heard: list[tuple[str, int]] = []
    report = diagnose("prog", repair=True, progress=lambda kind, n: heard.append((kind, n)))
    assert report.ok and {kind for kind, _ in heard} == {"vector"}
    db = Path(env["CHINVEX_HOME"]) / "indexes" / "prog" / "hybrid.db"
    chunks = sqlite3.connect(db).execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert sum(n for _, n in heard) == chunks > 0  # every chunk's vector was written again
    ticker = Ticker("doctor --repair prog", enabled=False)
    for kind, n in heard:
        ticker.add(kind, n)
    assert ticker.line().startswith(f"doctor --repair prog: {chunks} vectors · ")


def test_ticker_counts_read_as_english():
    """One source is not "1 sources", memories are not "memorys" (export and import count them)."""
    from chinvex.cli.progress import Ticker

    ticker = Ticker("import x.jsonl into y", enabled=False)
    ticker.count("source")
    ticker.add("memory", 3)
    ticker.add("feedback", 2)
    ticker.add("chunk embedded", 64)
    assert ticker.line().startswith(
        "import x.jsonl into y: 1 source, 3 memories, 2 feedback, 64 chunks embedded · "), ticker.line()


def test_choose_mode_and_the_figures():
    assert choose_mode(False, json_out=False, quiet=False) == "off"
    assert choose_mode(None, json_out=True, quiet=False) == "off"
    assert choose_mode(True, json_out=True, quiet=False) == "json"
    assert choose_mode(None, json_out=False, quiet=True) == "off"
    assert choose_mode(True, json_out=False, quiet=True) in ("bar", "lines")
    counters = Counters()
    counters.total, counters.done, counters.embedded = 10, 0, 0
    assert counters.eta() is None
    counters.started -= 20
    counters.done, counters.embedded = 4, 400
    assert counters.eta() == pytest.approx(30, rel=0.05) and counters.rate() == pytest.approx(20, rel=0.05)
    assert duration(59) == "59 s" and duration(61) == "1 min 01 s" and duration(3700) == "1 h 01 min"


def test_a_line_after_the_last_source_says_the_last_batch_is_being_embedded():
    """Sources are read before their chunks are embedded in batches: with every source read, the
    line must not look finished (or stuck) while the last batch is embedded."""
    counters = Counters()
    counters.total, counters.done, counters.last = 3, 2, "/r/b.py"
    assert counters.line("P").endswith("last: /r/b.py")
    counters.done = 3
    assert counters.line("P").endswith("finishing: embedding the last batch")
