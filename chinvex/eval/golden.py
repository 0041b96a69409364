"""Golden files: the documented format and the legacy chinvex format (DESIGN.md §10)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from chinvex.errors import UsageError
from chinvex.models import GoldenExpected, GoldenFile, GoldenQuery


def _from_legacy(data: dict[str, Any]) -> dict[str, Any]:
    queries = []
    for index, q in enumerate(data.get("queries", [])):
        if not isinstance(q, dict):
            raise ValueError(f"queries[{index}] is not an object")
        anchor = q.get("anchor")
        queries.append({
            "id": q.get("id") or f"q{index + 1}",
            "query": q.get("query"),
            "context": q.get("context"),
            "k": q.get("k"),
            "expected": [{"path": f, "contains": anchor} for f in q.get("expected_files", [])],
            **({"answerable": q["answerable"]} if "answerable" in q else {}),
        })
    return {"schema_version": 1, "name": data.get("name"), "k": data.get("k"), "queries": queries}


def load_golden(path: Path) -> GoldenFile:
    try:
        data = orjson.loads(Path(path).read_bytes())
    except FileNotFoundError:
        raise UsageError(f"--golden {path}: file not found") from None
    except OSError as exc:
        raise UsageError(f"--golden {path}: cannot read: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"--golden {path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("queries"), list):
        raise UsageError(f"--golden {path}: expected an object with a 'queries' list")
    try:
        if any(isinstance(q, dict) and "expected_files" in q for q in data["queries"]):
            data = _from_legacy(data)
        golden = GoldenFile.model_validate(data)
    except (ValidationError, ValueError) as exc:
        if isinstance(exc, ValidationError):
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise UsageError(f"--golden {path}: invalid field '{where}': {first['msg']}") from None
        raise UsageError(f"--golden {path}: {exc}") from None
    for index, query in enumerate(golden.queries):
        if query.id is None:
            query.id = f"q{index + 1}"
    return golden


__all__ = ["GoldenExpected", "GoldenFile", "GoldenQuery", "load_golden"]
