"""Issue 2: generated JSON Schemas stay in sync with the models; every package is installed."""

from __future__ import annotations

import tomllib
from pathlib import Path

from chinvex import schema_export
from helpers import REPO_ROOT

REPO = REPO_ROOT


def test_schema_files_are_up_to_date():
    assert schema_export.main(["--check"]) == 0, "run: python -m chinvex.schema_export"


def test_check_fails_when_a_schema_file_is_stale(tmp_path: Path):
    assert schema_export.main(["--out", str(tmp_path)]) == 0
    target = tmp_path / "document.schema.json"
    target.write_text(target.read_text().replace('"doc_id"', '"document_id"'))
    assert schema_export.main(["--out", str(tmp_path), "--check"]) == 1


def test_every_package_folder_is_listed_in_pyproject():
    """Every folder Python can import from the package roots is listed: those with an __init__.py
    and data-only folders (e.g. storage/migrations), which Python imports as namespace packages and
    setuptools warns about ("Package would be ignored") when they are not listed."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapping = config["package-dir"]
    found = set()
    for import_root, folder in mapping.items():
        base = REPO / folder
        for path in [base, *base.rglob("*")]:
            if not path.is_dir() or "__pycache__" in path.parts or path.name.endswith(".egg-info"):
                continue
            if not any(child.is_file() for child in path.iterdir()):
                continue
            rel = path.relative_to(base)
            found.add(".".join([import_root, *rel.parts]))
    assert found - listed == set(), f"add to pyproject packages: {sorted(found - listed)}"
    assert listed - found == set(), f"listed in pyproject but not a folder: {sorted(listed - found)}"


def test_package_data_of_listed_packages_is_declared():
    """Non-Python files inside listed packages are shipped only when package-data names them
    (under their own package, or under an enclosing one with the folder path in the glob)."""
    import fnmatch

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    data: dict[str, list[str]] = config.get("package-data", {})

    def folder_of(package: str) -> Path:
        root, *rest = package.split(".")
        return REPO / config["package-dir"][root] / Path(*rest)

    def declared(file: Path) -> bool:
        for owner, globs in data.items():
            base = folder_of(owner)
            if base in file.parents:
                rel = file.relative_to(base).as_posix()
                if any(fnmatch.fnmatch(rel, g) for g in globs):
                    return True
        return False

    missing = [str(f.relative_to(REPO)) for package in config["packages"]
               for f in folder_of(package).iterdir()
               if f.is_file() and f.suffix not in (".py", ".pyc") and not declared(f)]
    assert missing == [], f"declare in pyproject package-data: {missing}"


def test_example_contexts_validate():
    import json

    from chinvex.models import ContextConfig

    files = sorted((REPO / "contexts.example").glob("*.json"))
    assert len(files) >= 2
    for path in files:
        config = ContextConfig.model_validate(json.loads(path.read_text()))
        assert config.name and config.index.sqlite_path
