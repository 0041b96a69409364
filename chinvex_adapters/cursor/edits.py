"""File edits of Cursor's tools, in the kit's shape (`kit.edits.FileEdit`).

The kit knows most agents' edit tools, but not all of Cursor's names: the agent's
`StrReplace`, `MultiStrReplace` and `Delete`, the IDE's `delete_file`, `apply_patch` with a
`file_path`, `edit_file_v2` (whose text is in content-addressed rows, or a code block) and the
diff chunks the IDE keeps as an edit's result. The rest goes to `edits_from_call` with the
path under a key it reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chinvex_adapters.kit.edits import MAX_EDIT_CHARS, FileEdit, edits_from_call, patch_edits, resolve

PATH_KEYS = ("path", "file_path", "filePath", "target_file", "targetFile", "relativeWorkspacePath",
             "relative_workspace_path", "target_notebook", "targetNotebook")

REPLACE = frozenset({"strreplace", "search_replace", "multistrreplace", "edit_notebook",
                     "editnotebook"})
WRITE = frozenset({"write", "write_file", "create_file"})
DELETE = frozenset({"delete", "delete_file", "deletefile"})
DIFF_RESULT = frozenset({"edit_file", "reapply", "search_replace", "write", "edit_notebook",
                         "edit_file_v2"})
EDIT_TOOLS = REPLACE | WRITE | DELETE | DIFF_RESULT | {"apply_patch", "edit_file"}


def _cap(text: str | None) -> tuple[str | None, bool]:
    if text is None or len(text) <= MAX_EDIT_CHARS:
        return text, False
    return text[:MAX_EDIT_CHARS], True


def _file_edit(path: str, op: str, old: str | None, new: str | None, cwd: str | None) -> FileEdit:
    old, cut_old = _cap(old)
    new, cut_new = _cap(new)
    return FileEdit(path=path, op=op, old_text=old, new_text=new, abs_path=resolve(path, cwd),
                    truncated=cut_old or cut_new)


def path_of(args: dict[str, Any]) -> str | None:
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def diff_chunks_edit(path: str, result: Any, cwd: str | None) -> FileEdit | None:
    """The lines an IDE edit removed and added, from its result's `diff.chunks`."""
    diff = result.get("diff") if isinstance(result, dict) else None
    chunks = diff.get("chunks") if isinstance(diff, dict) else None
    if not isinstance(chunks, list):
        return None
    old: list[str] = []
    new: list[str] = []
    for chunk in chunks:
        text = chunk.get("diffString") if isinstance(chunk, dict) else None
        if not isinstance(text, str):
            continue
        for line in text.split("\n"):
            if line.startswith("+"):
                new.append(line[1:])
            elif line.startswith("-"):
                old.append(line[1:])
    if not old and not new:
        return None
    return _file_edit(path, "patch", "\n".join(old), "\n".join(new), cwd)


def _patch(path: str | None, args: dict[str, Any], cwd: str | None) -> list[FileEdit]:
    patch = next((v for k in ("patch", "input", "diff") if isinstance(v := args.get(k), str)), None)
    if not patch:
        return []
    found = patch_edits(patch, cwd)
    if found or not path:
        return found
    old = [ln[1:] for ln in patch.split("\n") if ln.startswith("-") and not ln.startswith("---")]
    new = [ln[1:] for ln in patch.split("\n") if ln.startswith("+") and not ln.startswith("+++")]
    return [_file_edit(path, "patch", "\n".join(old), "\n".join(new), cwd)] if old or new else []


def cursor_edits(name: str, args: Any, cwd: str | None, *, result: Any = None,
                 content_of: Callable[[str], str | None] | None = None) -> list[FileEdit] | None:
    """The edits a Cursor tool call made; None when the tool does not edit files (the kit may
    still find some)."""
    key = (name or "").strip().lower()
    if key not in EDIT_TOOLS or not isinstance(args, dict):
        return None
    path = path_of(args)
    if key == "apply_patch":
        return _patch(path, args, cwd)
    if not path:
        return []
    if key in DELETE:
        return [_file_edit(path, "delete", None, None, cwd)]
    if key == "edit_file_v2":
        return _edit_v2(path, result, cwd, content_of)
    norm = {**args, "file_path": path}
    found: list[FileEdit] = []
    if key in REPLACE:
        found = edits_from_call("multiedit" if isinstance(args.get("edits"), list) else "edit", norm, cwd)
    elif key in WRITE:
        found = edits_from_call("write", norm, cwd)
    if found:
        return found
    from_diff = diff_chunks_edit(path, result, cwd) if key in DIFF_RESULT else None
    if from_diff is not None:
        return [from_diff]
    return edits_from_call("edit_file", norm, cwd) if key == "edit_file" else []


def _edit_v2(path: str, result: Any, cwd: str | None,
             content_of: Callable[[str], str | None] | None) -> list[FileEdit]:
    """`edit_file_v2`: the file's text after the edit (and before it) from the
    content-addressed rows its result names, else its code block, else its diff chunks."""
    if isinstance(result, dict):
        after_id, before_id = result.get("afterContentId"), result.get("beforeContentId")
        if content_of is not None and isinstance(after_id, str):
            after = content_of(after_id)
            if after is not None:
                before = content_of(before_id) if isinstance(before_id, str) else None
                return [_file_edit(path, "write", before, after, cwd)]
        block = result.get("codeblock")
        if isinstance(block, dict) and isinstance(block.get("content"), str):
            return [_file_edit(path, "write", None, block["content"], cwd)]
        from_diff = diff_chunks_edit(path, result, cwd)
        if from_diff is not None:
            return [from_diff]
    return []
