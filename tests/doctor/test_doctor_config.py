"""doctor's context_config check accepts what `chinvex context create` accepts: a chat export
file as a chat root, "auto" and KIND=PATH session entries; and still names the broken ones."""

from __future__ import annotations

import json
from pathlib import Path

from chinvex.context.registry import Registry
from chinvex.doctor.files import check_config


def _config_with(tmp_path: Path, chinvex_home: Path, sessions: list[str]):
    export = tmp_path / "conversations.json"
    export.write_text("[]")
    codex = tmp_path / "codex"
    codex.mkdir()
    Registry().create("Cfg", includes={"chat_roots": [str(export)],
                                       "sessions": ["auto", f"codex={codex}"]})
    path = chinvex_home / "contexts" / "Cfg" / "context.json"
    data = json.loads(path.read_text())
    data["includes"]["sessions"] = data["includes"]["sessions"] + sessions
    path.write_text(json.dumps(data))
    return Registry().resolve("Cfg"), export


def test_export_file_and_session_entries_are_valid(tmp_path: Path, chinvex_home: Path):
    config, _export = _config_with(tmp_path, chinvex_home, [])
    check = check_config(config)
    assert check.status == "ok", check.examples


def test_broken_session_entries_are_named(tmp_path: Path, chinvex_home: Path):
    gone = tmp_path / "gone"
    config, export = _config_with(tmp_path, chinvex_home, [f"codex={gone}", "nonsense"])
    check = check_config(config)
    assert check.status == "error"
    assert any(str(gone) in e and "does not exist" in e for e in check.examples), check.examples
    assert any("nonsense" in e and "KIND=PATH" in e for e in check.examples), check.examples
    assert not any(str(export) in e or e.startswith("includes.sessions: auto") for e in check.examples)

