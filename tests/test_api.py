"""The library's front door (chinvex.api through `import chinvex`): only the public names are
used here, and the README's Python example runs as written, in a fresh interpreter, on a folder
of notes."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import chinvex
import chinvex.errors
from helpers import REPO_ROOT, git, init_repo

NOTE = """# Payments outage, 2026-05-20

The payments outage lasted 47 minutes (14:02 to 14:49 UTC). The retry queue filled up
because the backoff had no jitter.
"""


def _readme_example() -> str:
    """Every Python block of the README's library section, run in order as one script."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Using chinvex from Python", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) >= 2
    return "\n".join(blocks)


def test_import_chinvex_is_cheap_and_the_api_is_there():
    done = subprocess.run([sys.executable, "-c", "import sys, chinvex; "
                           "print(sorted(m for m in ('chinvex.api', 'chromadb', 'onnxruntime') if m in sys.modules)); "
                           "print(callable(chinvex.open), chinvex.Context.__name__)"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["[]", "True Context"]
    assert set(chinvex.__all__) == {"Context", "__version__", "contexts", "create", "open"}
    with pytest.raises(AttributeError):
        chinvex.nothing_here  # noqa: B018


def test_the_readme_example_runs(tmp_path, chinvex_home):
    (tmp_path / "my-notes").mkdir()
    (tmp_path / "my-notes" / "outage.md").write_text(NOTE, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", _readme_example()], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "1 sources indexed"
    assert "outage.md" in lines[1]
    assert any(line.startswith("True ") and "47 minutes" in line for line in lines)
    assert any(line.endswith("tokens packed") for line in lines)
    assert any(line.startswith("outage ['") for line in lines), lines  # the Engine example


def test_a_context_through_the_public_names_only(tmp_path, chinvex_home):
    repo = tmp_path / "repo"
    init_repo(repo)
    (repo / "retry.py").write_text("def with_backoff(call):\n    return call()\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "retry")
    ctx = chinvex.create("api", repos=[repo])
    assert "api" in chinvex.contexts()
    with ctx:
        assert ctx.ingest().sources.indexed == 1
        hit = ctx.search("with_backoff", k=1, mode="fts").results[0]
        assert hit.source_uri == str(repo / "retry.py")
        chunk = ctx.get(hit.chunk_id)
        assert chunk["kind"] == "chunk" and "with_backoff" in chunk["chunk"]["text"]
        assert ctx.get("no-such-id") is None
        report = ctx.blame(repo / "retry.py", lines=1)
        assert report["git"] and report["lines"][0]["commit"]["subject"] == "retry" and report["sessions"] == []
        assert ctx.timeline(since="30d")["commits"] == 1
        assert ctx.stats()["totals"]["documents"] == 1
    again = chinvex.open("api")
    assert again.name == "api" and repr(again) == "<chinvex.Context 'api'>"
    with pytest.raises(chinvex.errors.ChinvexError):
        chinvex.open("missing")
    with pytest.raises(chinvex.errors.ChinvexError):
        ctx.search("  ")
