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


EXPECTED_FORM = 'each expected item is an object like {"path": "src/retry.py", "contains": "backoff"}'


def _where(loc: tuple[Any, ...]) -> str:
    """A validation error's location as the file spells it: `queries[0].expected[1]`."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _problem(error: dict[str, Any], data: dict[str, Any]) -> str:
    """One validation error in the words of the golden format: which query and which field, and
    for an expected item, the form it must take (pydantic's own message names model classes)."""
    loc = tuple(error["loc"])
    if len(loc) >= 3 and loc[0] == "queries" and isinstance(loc[1], int) and loc[2] == "expected":
        query = data["queries"][loc[1]]
        name = query.get("id") if isinstance(query, dict) and isinstance(query.get("id"), str) else None
        which = f"query {name!r} ({_where(loc[:2])})" if name else _where(loc[:2])
        if len(loc) == 3:
            return f"{which}: expected must be a list; {EXPECTED_FORM}"
        item = _where(loc[2:4])
        if len(loc) == 4:
            return f"{which}: {item} is {orjson.dumps(error.get('input')).decode()[:80]}; {EXPECTED_FORM}"
        return f"{which}: {item}: invalid field '{_where(loc[4:])}': {error['msg']}; {EXPECTED_FORM}"
    return f"invalid field '{_where(loc)}': {error['msg']}"


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
            raise UsageError(f"--golden {path}: {_problem(exc.errors()[0], data)}") from None
        raise UsageError(f"--golden {path}: {exc}") from None
    for index, query in enumerate(golden.queries):
        if query.id is None:
            query.id = f"q{index + 1}"
    return golden


__all__ = ["GoldenExpected", "GoldenFile", "GoldenQuery", "load_golden"]
