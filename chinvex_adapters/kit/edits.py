"""File edits as data, whichever agent made them.

Agents name the same acts differently (Claude Code `Edit`, Gemini CLI `replace`, OpenCode
`edit` with `filePath`, Cline `replace_in_file` with SEARCH/REPLACE blocks, Codex
`apply_patch`, Copilot `str_replace_editor`...). `edits_from_call` turns a tool call into
`FileEdit`s (path, operation, the text replaced and the text written) so that a turn records
what it changed in one shape: `Turn.meta["edits"]`. The texts are what `blame` matches lines
against; they are capped, never dropped silently (`truncated`).
"""

from __future__ import annotations

import ntpath
import posixpath
import re
from dataclasses import dataclass
from typing import Any

MAX_EDIT_CHARS = 200_000

_PATH_KEYS = ("file_path", "filePath", "path", "target_file", "targetFile", "notebook_path",
              "absolute_path", "absolutePath", "filename", "file", "uri", "relativeWorkspacePath",
              "target_notebook")
_OLD_KEYS = ("old_string", "oldString", "old_str", "oldStr", "oldText", "old_text", "search", "old",
             "before")
_NEW_KEYS = ("new_string", "newString", "new_str", "newStr", "newText", "new_text", "replace",
             "new", "replacement", "after")
_CONTENT_KEYS = ("content", "file_text", "fileText", "contents", "text", "code", "new_source",
                 "code_edit", "codeEdit")
_PATCH_KEYS = ("patch", "patchText", "patch_text", "input", "diff", "changes")

WRITE_TOOLS = frozenset({
    "write", "write_file", "writefile", "create", "create_file", "createfile", "write_to_file",
    "new_file", "notebookedit", "edit_notebook", "edit_file", "editfile", "insert_content",
    "insert_edit_into_file", "save_file", "overwrite_file", "new_rule", "writefile",
})
"""Tools that write a file's whole content, or a fragment given without the text it replaces
(Cursor's `edit_file` with its `code_edit`)."""
REPLACE_TOOLS = frozenset({
    "edit", "multiedit", "multi_edit", "replace", "str_replace", "strreplacefile", "search_replace",
    "search_and_replace", "replace_string_in_file", "multi_replace_string_in_file",
    "edit_file_by_replacement", "apply_edit", "replace_in_file", "apply_diff", "edit_file",
    "editfile", "smart_edit", "strreplace", "multistrreplace", "edit_file_v2", "editor",
})
DELETE_TOOLS = frozenset({"delete", "delete_file", "deletefile", "remove_file"})
"""Tools that replace one text by another (or several: MultiEdit, Cline's SEARCH/REPLACE)."""
PATCH_TOOLS = frozenset({"apply_patch", "applypatch", "patch", "apply_diff", "replace_in_file"})
EDITOR_TOOLS = frozenset({"str_replace_editor", "str_replace_based_edit_tool", "text_editor",
                          "texteditor", "edit_tool"})
"""The Anthropic text-editor shape: one tool whose `command` says create / str_replace / insert."""

SHELL_TOOLS = frozenset({"bash", "shell", "exec_command", "local_shell", "shell_command", "run_shell_command",
                         "run_terminal_cmd", "run_in_terminal", "execute_command", "terminal", "powershell"})
"""Tools that run a shell command: a heredoc redirected to one file is a write of that file."""
_HEREDOC = re.compile(
    r"^[\t ]*(?P<head>(?:cat|tee)\b[^\n]*?)<<-?[\t ]*(?P<q>['\"]?)(?P<tag>[A-Za-z_][A-Za-z0-9_]*)(?P=q)"
    r"(?P<tail>[^\n]*)\n(?P<body>.*?)\n[\t ]*(?P=tag)[\t ]*$", re.S | re.M)
_REDIRECT = re.compile(r"(>>?)[\t ]*(['\"]?)([^\s'\";&|<>]+)\2")
_TEE = re.compile(r"\btee[\t ]+(-a[\t ]+)?(['\"]?)([^\s'\";&|<>-][^\s'\";&|<>]*)\2[\t ]*$")

_SEARCH_REPLACE = re.compile(
    r"^(?:<{5,9}|-{5,9}) ?SEARCH[^\n]*\n(.*?)^={5,9}[^\n]*\n(.*?)^(?:>{5,9}|\+{5,9}) ?REPLACE[^\n]*$",
    re.S | re.M)


@dataclass
class FileEdit:
    path: str
    op: str  # edit | write | patch | delete | move
    old_text: str | None = None
    new_text: str | None = None
    abs_path: str | None = None
    truncated: bool = False

    def as_meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "op": self.op}
        if self.abs_path:
            out["abs_path"] = self.abs_path
        if self.old_text is not None:
            out["old_text"] = self.old_text
        if self.new_text is not None:
            out["new_text"] = self.new_text
        if self.truncated:
            out["truncated"] = True
        return out


def tool_key(name: str) -> str:
    """A tool name as the tables above know it: MCP and toolset prefixes dropped
    (`mcp__fs__write_file`, `developer__text_editor`), lower case."""
    base = name.rsplit("__", 1)[-1] if "__" in name else name
    base = base.rsplit(".", 1)[-1] if "." in base else base
    return base.strip().lower()


def _is_windows(path: str) -> bool:
    return bool(re.match(r"^[A-Za-z]:[\\/]", path)) or path.startswith("\\\\")


def resolve(path: str, cwd: str | None) -> str | None:
    """The absolute path an edit touched: as given when absolute, else joined to the session's
    working directory (None when there is none). `file://` URIs are read as paths."""
    if path.startswith("file://"):
        from urllib.parse import unquote, urlparse

        path = unquote(urlparse(path).path)
        if re.match(r"^/[A-Za-z]:/", path):
            path = path[1:]
    if _is_windows(path):
        return ntpath.normpath(path)
    if path.startswith("/"):
        return posixpath.normpath(path)
    if path.startswith("~"):
        return None
    if not cwd:
        return None
    if _is_windows(cwd):
        return ntpath.normpath(ntpath.join(cwd, path))
    return posixpath.normpath(posixpath.join(cwd, path))


def _cap(text: str | None) -> tuple[str | None, bool]:
    if text is None or len(text) <= MAX_EDIT_CHARS:
        return text, False
    return text[:MAX_EDIT_CHARS], True


def _edit(path: str, op: str, old: str | None, new: str | None, cwd: str | None) -> FileEdit:
    old, cut_old = _cap(old)
    new, cut_new = _cap(new)
    return FileEdit(path=path, op=op, old_text=old, new_text=new, abs_path=resolve(path, cwd),
                    truncated=cut_old or cut_new)


def _first(args: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in args:
            return args[key]
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def search_replace_blocks(text: str) -> list[tuple[str, str]]:
    """(search, replace) pairs of SEARCH/REPLACE blocks (Cline, Roo, Aider)."""
    return [(m.group(1).rstrip("\n"), m.group(2).rstrip("\n")) for m in _SEARCH_REPLACE.finditer(text)]


def patch_edits(text: str, cwd: str | None) -> list[FileEdit]:
    """Per-file edits of a Codex `apply_patch` envelope or a unified diff: the removed lines as
    `old_text`, the added lines as `new_text` (an added file is a write)."""
    if "*** Begin Patch" in text or re.search(r"^\*\*\* (?:Add|Update|Delete) File: ", text, re.M):
        return _codex_patch(text, cwd)
    return _unified_diff(text, cwd)


def _codex_patch(text: str, cwd: str | None) -> list[FileEdit]:
    edits: list[FileEdit] = []
    current: dict[str, Any] | None = None

    def close() -> None:
        if current is not None:
            # A moved file's new lines live at its new path.
            edits.append(_edit(current.get("moved_to") or current["path"], current["op"],
                               "\n".join(current["old"]) if current["op"] != "write" else None,
                               "\n".join(current["new"]), cwd))

    for line in text.splitlines():
        header = re.match(r"^\*\*\* (Add|Update|Delete) File: (.+)$", line)
        if header:
            close()
            op = {"Add": "write", "Update": "patch", "Delete": "delete"}[header.group(1)]
            current = {"path": header.group(2).strip(), "op": op, "old": [], "new": []}
            continue
        if current is None:
            continue
        moved = re.match(r"^\*\*\* Move to: (.+)$", line)
        if moved:
            current["moved_to"] = moved.group(1).strip()
            continue
        if line.startswith("*** End"):
            continue
        if line.startswith("+"):
            current["new"].append(line[1:])
        elif line.startswith("-"):
            current["old"].append(line[1:])
    close()
    return edits


def _unified_diff(text: str, cwd: str | None) -> list[FileEdit]:
    edits: list[FileEdit] = []
    path: str | None = None
    old: list[str] = []
    new: list[str] = []
    in_hunk = False

    def close() -> None:
        if path is not None and (old or new):
            edits.append(_edit(path, "patch", "\n".join(old), "\n".join(new), cwd))

    for line in text.splitlines():
        if line.startswith("+++ "):
            target = line[4:].split("\t", 1)[0].strip()
            close()
            old, new, in_hunk = [], [], False
            path = None if target == "/dev/null" else re.sub(r"^[ab]/", "", target)
            continue
        if line.startswith("--- ") and not in_hunk:
            continue
        if line.startswith("@@"):
            in_hunk = True
            continue
        if in_hunk and path is not None:
            if line.startswith("+"):
                new.append(line[1:])
            elif line.startswith("-"):
                old.append(line[1:])
    close()
    return edits


def _replacements(path: str, args: dict[str, Any], cwd: str | None) -> list[FileEdit]:
    for key in ("edits", "edit"):  # MultiEdit's list; Kimi's one edit or a list of them
        items = args.get(key)
        items = [items] if key == "edit" and isinstance(items, dict) else items if isinstance(items, list) else []
        out = [_edit(path, "edit", _text(_first(item, _OLD_KEYS)), new, cwd) for item in items
               if isinstance(item, dict) and (new := _text(_first(item, _NEW_KEYS))) is not None]
        if out:
            return out
    old, new = _text(_first(args, _OLD_KEYS)), _text(_first(args, _NEW_KEYS))
    if new is not None:
        return [_edit(path, "edit", old, new, cwd)]
    diff = _text(args.get("diff"))
    if diff:
        blocks = search_replace_blocks(diff)
        if blocks:
            return [_edit(path, "edit", o, n, cwd) for o, n in blocks]
        found = patch_edits(diff, cwd)
        if found:
            return [FileEdit(path=path, op="patch", old_text=e.old_text, new_text=e.new_text,
                             abs_path=resolve(path, cwd), truncated=e.truncated) for e in found]
    return []


def _editor(path: str, args: dict[str, Any], cwd: str | None) -> list[FileEdit]:
    command = str(args.get("command") or "").lower()
    if command in ("create", "write"):
        content = _text(_first(args, _CONTENT_KEYS))
        return [_edit(path, "write", None, content, cwd)] if content is not None else []
    if command in ("str_replace", "replace"):
        return _replacements(path, args, cwd)
    if command == "insert":
        new = _text(_first(args, ("new_str", "insert_text", "text")))
        return [_edit(path, "edit", None, new, cwd)] if new is not None else []
    return []


def heredoc_edits(command: str, cwd: str | None) -> list[FileEdit]:
    """Files a shell command writes from a heredoc, where that is unambiguous: `cat > PATH
    <<'EOF'` (or `>>`, an append) and `tee [-a] PATH <<EOF`, with exactly one target and no pipe
    before the heredoc. Anything else (several redirects, `cat a b > c`, a variable as target)
    is not read as an edit."""
    edits: list[FileEdit] = []
    for match in _HEREDOC.finditer(command):
        head, tail = match["head"], match["tail"]
        if "|" in head or "$" in head + tail:
            continue
        if head.startswith("tee"):
            target = _TEE.search(head.rstrip())
            if target is None or _REDIRECT.search(head + tail):
                continue
            path, append = target[3], bool(target[1])
        else:
            found = _REDIRECT.findall(head + tail)
            words = head.split()[1:]
            if len(found) != 1 or any(not w.startswith(">") and w != found[0][2] for w in words):
                continue
            path, append = found[0][2], found[0][0] == ">>"
        edits.append(_edit(path, "edit" if append else "write", None, match["body"], cwd))
    return edits


def _command_of(args: Any) -> tuple[str | None, str | None]:
    """The command text of a shell tool call and the folder it ran in, when the call says."""
    if isinstance(args, str):
        return args, None
    if not isinstance(args, dict):
        return None, None
    command = args.get("command", args.get("cmd", args.get("script")))
    if isinstance(command, list):
        parts = [c for c in command if isinstance(c, str)]
        command = parts[-1] if len(parts) >= 2 and parts[-2] in ("-c", "-lc", "/c", "-Command") else " ".join(parts)
    where = next((args[k] for k in ("workdir", "cwd", "working_directory", "directory") if isinstance(args.get(k), str)), None)
    return (command if isinstance(command, str) else None), where


def edits_from_call(name: str, args: Any, cwd: str | None = None) -> list[FileEdit]:
    """The file edits a tool call made, [] when it is not an edit (or its arguments do not say
    what was written). `args` may be a dict or a JSON string of one."""
    key = tool_key(name or "")
    if key in SHELL_TOOLS:
        if isinstance(args, str) and args.lstrip().startswith("{"):
            try:
                import orjson

                args = orjson.loads(args)
            except ValueError:
                pass
        command, where = _command_of(args)
        return heredoc_edits(command, where or cwd) if command and "<<" in command else []
    if isinstance(args, str):
        if key in PATCH_TOOLS and ("*** Begin Patch" in args or "@@" in args):
            return patch_edits(args, cwd)
        try:
            import orjson

            args = orjson.loads(args)
        except ValueError:
            return []
    if not isinstance(args, dict):
        return []
    path = _text(_first(args, _PATH_KEYS))
    if key in PATCH_TOOLS and not path:
        patch = _text(_first(args, _PATCH_KEYS))
        if patch:
            return patch_edits(patch, cwd)
    if not path:
        return []
    if key in DELETE_TOOLS:
        return [_edit(path, "delete", None, None, cwd)]
    if key in EDITOR_TOOLS:
        return _editor(path, args, cwd)
    if key in REPLACE_TOOLS:
        found = _replacements(path, args, cwd)
        if found:
            return found
    if key in WRITE_TOOLS or key in REPLACE_TOOLS:
        content = _text(_first(args, _CONTENT_KEYS))
        if content is not None:
            return [_edit(path, "write", None, content, cwd)]
    return []
