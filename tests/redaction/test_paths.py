"""A file whose name holds a secret is indexed under its redacted path, and is still found on
disk: the next ingest removes nothing, doctor reports nothing stale and search results are
fresh (issue 40's rough edge: such files were reported deleted forever). Tokens are generated
at run time, so nothing here is a real-looking literal."""

from __future__ import annotations

import random
import string
from pathlib import Path

from helpers import run_cli

from chinvex.redaction import redact_uri
from chinvex.redaction.paths import real_path

_rng = random.Random(4040)
TOKEN = "gh" + "p_" + "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(36))
PASSWORD_FOLDER = "password=" + "Maple" + "42-rocket"


def test_real_path_finds_the_file_a_redacted_uri_names(tmp_path: Path):
    other = "gh" + "p_" + TOKEN[4:][::-1] + "Zz"
    for name in (f"prod-{TOKEN}.md", f"prod-{other}.md", "plain.md"):
        (tmp_path / name).write_text("x")
    (tmp_path / PASSWORD_FOLDER).mkdir()
    (tmp_path / PASSWORD_FOLDER / f"{TOKEN}.txt").write_text("y")
    for real in (tmp_path / f"prod-{TOKEN}.md", tmp_path / f"prod-{other}.md",
                 tmp_path / PASSWORD_FOLDER / f"{TOKEN}.txt", tmp_path / "plain.md"):
        redacted = redact_uri(str(real))
        assert TOKEN not in redacted and other not in redacted
        assert real_path(redacted) == str(real)
    gone = redact_uri(str(tmp_path / f"prod-{TOKEN}x.md"))
    assert real_path(gone) == gone, "no entry matches: the uri as it is (the file is gone)"


def test_a_file_named_with_a_token_is_never_reported_stale(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / PASSWORD_FOLDER).mkdir(parents=True)
    (repo / f"prod-{TOKEN}.md").write_text("# Rotation\n\nThe quokka deploy checklist.\n")
    (repo / PASSWORD_FOLDER / "notes.md").write_text("# Notes\n\nThe wombat migration plan.\n")
    (repo / "plain.md").write_text("# Plain\n\nNothing to hide.\n")
    assert run_cli("context", "create", "Named", "--repo", str(repo)).code == 0
    first = run_cli("ingest", "--context", "Named", "--json")
    assert first.code == 0 and first.json["sources"]["indexed"] == 3, first
    second = run_cli("ingest", "--context", "Named", "--json")
    assert second.code == 0, second
    assert second.json["sources"]["indexed"] == 0 and second.json["sources"]["removed"] == 0, \
        second.json["sources"]

    doctor = run_cli("doctor", "--context", "Named", "--json")
    stale = next(c for c in doctor.json["checks"] if c["name"] == "stale_sources")
    assert stale["status"] == "ok", stale
    assert TOKEN not in doctor.stdout and "Maple42" not in doctor.stdout
    found = run_cli("search", "--context", "Named", "quokka deploy checklist", "--json")
    hit = next(r for r in found.json["results"] if "quokka" in r["text"])
    assert "[REDACTED:github_token@" in hit["source_uri"] and TOKEN not in found.stdout
    assert hit["freshness"]["stale"] is False, hit

    (repo / f"prod-{TOKEN}.md").unlink()
    doctor = run_cli("doctor", "--context", "Named", "--json")
    stale = next(c for c in doctor.json["checks"] if c["name"] == "stale_sources")
    assert stale["status"] != "ok" and TOKEN not in doctor.stdout, "a real deletion still shows"
