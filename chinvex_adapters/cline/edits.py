"""File edits of the Cline family's tools where the kit's `edits_from_call` does not read them
right: Roo's `apply_diff` (SEARCH blocks opened by `:start_line:` markers, and the multi-file
`<args>` form), `insert_content` (an insertion, not a whole file), Cline's `new_rule` (writes a
rules file) and the SDK's `editor` (`old_text` -> `new_text`, or a new file). Everything else
is left to the kit (None)."""

from __future__ import annotations

import re
from typing import Any

from chinvex_adapters.kit.edits import FileEdit, edits_from_call, resolve, search_replace_blocks

_MARKERS = re.compile(r"^(?:\\?:(?:start|end)_line:[ \t]*\d+[ \t]*\n)+(?:-------[ \t]*\n)?")
_PATH_KEYS = ("path", "absolutePath", "file_path", "filePath")


def _path(args: dict[str, Any]) -> str | None:
    for key in _PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _edit(path: str, op: str, old: str | None, new: str | None, cwd: str | None) -> FileEdit:
    return FileEdit(path=path, op=op, old_text=old, new_text=new, abs_path=resolve(path, cwd))


def diff_edits(path: str, diff: str, cwd: str | None) -> list[FileEdit]:
    """SEARCH/REPLACE blocks of one file, Roo's line markers dropped from the search text."""
    found = []
    for old, new in search_replace_blocks(diff):
        old = _MARKERS.sub("", old, count=1) if old.startswith((":", "\\:")) else old
        found.append(_edit(path, "edit", old, new, cwd))
    return found


def _multi_file(args: list[Any], cwd: str | None) -> list[FileEdit]:
    """Roo's `<args><file><path/><diff><content/></diff></file></args>`."""
    out: list[FileEdit] = []
    for item in args:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            continue
        diffs = item.get("diff")
        for diff in diffs if isinstance(diffs, list) else [diffs]:
            body = diff.get("content") if isinstance(diff, dict) else diff
            if isinstance(body, str):
                out.extend(diff_edits(item["path"], body, cwd))
    return out


def call_edits(name: str, args: Any, cwd: str | None) -> list[FileEdit] | None:
    """The edits of a call the kit would misread; None to let the kit decide."""
    if not isinstance(args, dict):
        return None
    key = name.lower()
    path = _path(args)
    if key == "apply_diff":
        if isinstance(args.get("args"), list):
            return _multi_file(args["args"], cwd)
        diff = args.get("diff")
        if path and isinstance(diff, str) and ":start_line:" in diff:
            return diff_edits(path, diff, cwd)
        return None
    if key == "insert_content" and path and isinstance(args.get("content"), str):
        return [_edit(path, "edit", None, args["content"], cwd)]
    if key == "new_rule" and path and isinstance(args.get("content"), str):
        return [_edit(path, "write", None, args["content"], cwd)]
    if key == "editor" and path and isinstance(args.get("new_text"), str):
        old = args.get("old_text")
        if isinstance(old, str):
            return [_edit(path, "edit", old, args["new_text"], cwd)]
        op = "edit" if args.get("insert_line") is not None else "write"
        return [_edit(path, op, None, args["new_text"], cwd)]
    return None


def edits_of(name: str, args: Any, cwd: str | None) -> list[FileEdit]:
    """Every edit a call made, by this module's rules or the kit's."""
    mine = call_edits(name, args, cwd)
    return mine if mine is not None else edits_from_call(name, args, cwd)
