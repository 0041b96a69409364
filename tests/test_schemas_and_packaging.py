"""Issue 2: generated JSON Schemas stay in sync with the models; every package is installed."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from chinvex import schema_export

REPO = Path(__file__).resolve().parent.parent


def test_schema_files_are_up_to_date():
    assert schema_export.main(["--check"]) == 0, "run: python -m chinvex.schema_export"


def test_check_fails_when_a_schema_file_is_stale(tmp_path: Path):
    assert schema_export.main(["--out", str(tmp_path)]) == 0
    target = tmp_path / "document.schema.json"
    target.write_text(target.read_text().replace('"doc_id"', '"document_id"'))
    assert schema_export.main(["--out", str(tmp_path), "--check"]) == 1


def test_every_package_folder_is_listed_in_pyproject():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapping = config["package-dir"]
    found = set()
    for import_root, folder in mapping.items():
        base = REPO / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            parts = [import_root, *rel.parts] if rel.parts else [import_root]
            found.add(".".join(parts))
    assert found - listed == set(), f"add to pyproject packages: {sorted(found - listed)}"


def test_example_contexts_validate():
    import json

    from chinvex.models import ContextConfig

    files = sorted((REPO / "contexts.example").glob("*.json"))
    assert len(files) >= 2
    for path in files:
        config = ContextConfig.model_validate(json.loads(path.read_text()))
        assert config.name and config.index.sqlite_path
