"""The pieces of a chat request: its prompt and attachments, the response parts VS Code
persists, the tool results Copilot keeps in `result.metadata`, and file edits.

Markdown is stored as MarkdownString objects without a `kind` (`{value, ...}`), split around
`inlineReference` parts (a file named in a sentence: rendered back as its name). Edits VS
Code applied are `textEditGroup` parts: a file URI and batches of `{text, range}`, the final
text per range; one group becomes one FileEdit (its texts as the new text).
"""

from __future__ import annotations

import posixpath
from collections import Counter
from typing import Any

from chinvex.models import Attachment
from chinvex_adapters.kit.edits import FileEdit, resolve
from chinvex_adapters.kit.text import as_str, clean_text
from chinvex_adapters.kit.turns import render_output

from .layout import uri_path

MAX_ATTACHMENTS = 100
MAX_NODES = 20_000


def text_of(value: Any) -> str:
    """A string or a MarkdownString's `value` (also a list of either) as text."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return text_of(value.get("value", value.get("content")))
    if isinstance(value, list):
        return "".join(text_of(v) for v in value)
    return ""


def prompt(message: Any) -> str:
    """What the user typed: `message.text`, else its text parts (old files: a string)."""
    if isinstance(message, str):
        return message
    if not isinstance(message, dict):
        return ""
    if isinstance(message.get("text"), str):
        return message["text"]
    parts = message.get("parts")
    if isinstance(parts, list):
        return "".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def attachments(variable_data: Any, counts: Counter[str]) -> list[Attachment]:
    """`variableData.variables` as references (files, folders, selections, symbols, images
    by name only: an image's bytes are never kept)."""
    variables = variable_data.get("variables") if isinstance(variable_data, dict) else None
    found: list[Attachment] = []
    for item in (variables if isinstance(variables, list) else [])[:MAX_ATTACHMENTS]:
        if not isinstance(item, dict):
            continue
        kind = as_str(item.get("kind")) or "file"
        name = as_str(item.get("name"))
        value = item.get("value")
        path = None if kind == "image" else uri_path(value)
        if kind == "image" and value is not None:
            counts["attachment_bytes_dropped"] += 1
        if not (name or path):
            continue
        extra: dict[str, Any] = {}
        ident = as_str(item.get("id")) or ""
        if ident.startswith("vscode.implicit"):
            extra["implicit"] = True
        if isinstance(value, dict) and isinstance(value.get("range"), dict):
            extra["range"] = {k: v for k, v in value["range"].items()
                              if k in ("startLineNumber", "endLineNumber") and isinstance(v, int)}
        found.append(Attachment(kind=clean_text(kind), name=name, path=path, **extra))
    return found


def reference_name(part: dict[str, Any]) -> str:
    """An inline reference as the file (or symbol) name it shows, in backticks."""
    ref = part.get("inlineReference")
    name = as_str(part.get("name")) or (as_str(ref.get("name")) if isinstance(ref, dict) else None)
    if not name:
        path = uri_path(ref)
        name = posixpath.basename(path.replace("\\", "/").rstrip("/")) if path else None
    return f"`{name}`" if name else ""


def thinking_text(value: Any) -> str:
    """A `thinking` part's or a tool round's thinking (text, list of texts, `{text}`)."""
    if isinstance(value, dict):
        for key in ("text", "value", "content"):
            if key in value:
                return thinking_text(value[key])
        return ""
    if isinstance(value, list):
        return "".join(thinking_text(v) for v in value)
    return value if isinstance(value, str) else ""


def tool_output(value: Any) -> str | None:
    """A `toolCallResults` entry as text: its content items' strings, or the text leaves of
    a prompt-tsx node tree (`node.children[].text`)."""
    if value is None:
        return None
    content = value.get("content") if isinstance(value, dict) else value
    if not isinstance(content, list):
        return render_output(content)
    pieces: list[str] = []
    for item in content:
        inner = item.get("value") if isinstance(item, dict) else item
        if isinstance(inner, str):
            pieces.append(inner)
        elif isinstance(inner, dict) and isinstance(inner.get("node"), dict):
            pieces.append(_tsx_text(inner["node"]))
        elif inner is not None:
            pieces.append(render_output(inner))
    return "".join(pieces)


def _tsx_text(root: dict[str, Any]) -> str:
    out: list[str] = []
    stack: list[Any] = [root]
    seen = 0
    while stack and seen < MAX_NODES:
        node = stack.pop()
        seen += 1
        if not isinstance(node, dict):
            continue
        if isinstance(node.get("text"), str):
            out.append(node["text"])
        children = node.get("children")
        if isinstance(children, list):
            stack.extend(reversed(children))
    return "".join(out)


def edit_group(part: dict[str, Any], cwd: str | None) -> FileEdit | None:
    """A `textEditGroup` part as one edit of its file (None when it names no file or holds
    no text)."""
    path = uri_path(part.get("uri"))
    if not path:
        return None
    texts: list[str] = []
    for batch in part.get("edits") or ():
        for edit in batch if isinstance(batch, list) else [batch]:
            if isinstance(edit, dict) and isinstance(edit.get("text"), str):
                texts.append(edit["text"])
    if not any(t.strip() for t in texts):
        return None
    new_text = "\n".join(t.rstrip("\n") for t in texts if t.strip())
    return FileEdit(path=path, op="edit", new_text=new_text, abs_path=resolve(path, cwd))


def model_of(request: dict[str, Any]) -> str | None:
    """The model that answered: Copilot's resolved model, else the chosen model id without
    its `copilot/` vendor prefix (the `auto` router: the label VS Code showed, e.g. "GPT-4o")."""
    result = request.get("result") if isinstance(request.get("result"), dict) else {}
    metadata = result.get("metadata") if isinstance(result.get("metadata"), dict) else {}
    resolved = as_str(metadata.get("resolvedModel"))
    if resolved:
        return resolved
    model = as_str(request.get("modelId"))
    if model and "/" in model:
        model = model.split("/", 1)[1]
    if model in (None, "auto"):
        label = as_str(result.get("details"))
        if label:
            return label.split(" • ", 1)[0].strip() or model
    return model


def base_folder(requests: list[Any]) -> str | None:
    """The folder VS Code resolved the answers' links against (a markdown part's `baseUri`):
    the workspace's folder when its `workspace.json` is not at hand."""
    for request in requests:
        parts = request.get("response") if isinstance(request, dict) else None
        for part in parts if isinstance(parts, list) else ():
            base = part.get("baseUri") if isinstance(part, dict) else None
            path = uri_path(base) if isinstance(base, dict) else None
            if path:
                return path.rstrip("/") or "/"
    return None
