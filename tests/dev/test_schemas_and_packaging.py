"""Issue 2: generated JSON Schemas stay in sync with the models; every package is installed."""

from __future__ import annotations

import tomllib
from pathlib import Path

from chinvex.dev import schema_export
from helpers import REPO_ROOT

REPO = REPO_ROOT


def test_schema_files_are_up_to_date():
    assert schema_export.main(["--check"]) == 0, "run: python -m chinvex.dev.schema_export"


def test_check_fails_when_a_schema_file_is_stale(tmp_path: Path):
    assert schema_export.main(["--out", str(tmp_path)]) == 0
    target = tmp_path / "document.schema.json"
    target.write_text(target.read_text().replace('"doc_id"', '"document_id"'))
    assert schema_export.main(["--out", str(tmp_path), "--check"]) == 1


def _setuptools() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def _packages() -> set[str]:
    """The packages pyproject's package search installs."""
    from setuptools import find_namespace_packages

    found = _setuptools()["packages"]["find"]
    assert found.get("namespaces", True), "data-only folders are namespace packages"
    return set(find_namespace_packages(where=str(REPO), include=found["include"]))


def _folder_of(package: str) -> Path:
    return REPO / Path(*package.split("."))


def test_every_package_folder_is_installed():
    """Every folder of the two packages holding files is found by pyproject's package search
    (those with an __init__.py and data-only ones such as storage/migrations), and nothing else
    is: the folders are named as they are imported."""
    folders = set()
    for root in ("chinvex", "chinvex_adapters"):
        for path in [REPO / root, *(REPO / root).rglob("*")]:
            if not path.is_dir() or "__pycache__" in path.parts or path.name.endswith(".egg-info"):
                continue
            if any(child.is_file() for child in path.iterdir()):
                folders.add(".".join(path.relative_to(REPO).parts))
    found = _packages()
    assert folders - found == set(), f"not installed: {sorted(folders - found)}"
    assert found - folders == set(), f"installed but not a package folder: {sorted(found - folders)}"
    assert {"chinvex.storage.migrations", "chinvex_adapters.kit", "chinvex.blame"} <= found


def test_package_data_of_listed_packages_is_declared():
    """Non-Python files inside the packages are shipped only when package-data names them
    (under their own package, or under an enclosing one with the folder path in the glob)."""
    import fnmatch

    data: dict[str, list[str]] = _setuptools().get("package-data", {})

    def declared(file: Path) -> bool:
        for owner, globs in data.items():
            base = _folder_of(owner)
            if base in file.parents:
                rel = file.relative_to(base).as_posix()
                if any(fnmatch.fnmatch(rel, g) for g in globs):
                    return True
        return False

    missing = [str(f.relative_to(REPO)) for package in sorted(_packages())
               for f in _folder_of(package).iterdir()
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
