"""One ChatGPT export conversation (a `mapping` tree) → one `ConversationDoc`.

The export stores every regeneration and edit as a branch of a tree; what the user saw is the
path from `current_node` up to the root. Only that path becomes turns; the other branches are
kept addressable in metadata (where they fork, which child was chosen, what else exists) so a
later tool can fetch them, without filling the index with near-duplicate answers.

Tool traffic is folded into `role="tool"` turns: an assistant message addressed to a tool
(`recipient != "all"`) is the call, the `tool` messages that follow are its result.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from chinvex.ids import sha256_hex, thread_doc_id
from chinvex.models import Attachment, ConversationDoc, ToolCall, Turn
from chinvex.models.sources import ParseReport
from chinvex.timeutil import to_utc

from .chatgpt_content import Rendered, render_content
from chinvex_adapters.kit.text import (
    as_str,
    clean_text,
    fill_times,
    json_safe,
    one_line,
    searchable,
    truncate_middle,
)

SOURCE = "chatgpt_export"
SOURCE_TYPE = "chat"
ROLES = {"user", "assistant", "system", "tool"}
TOOL_OUTPUT_HEAD = 3000
TOOL_OUTPUT_TAIL = 1000
MAX_BRANCHES_LISTED = 50


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _ts(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    return to_utc(value)


def thread_id_of(conv: dict[str, Any], index: int) -> tuple[str, bool]:
    """conversation_id, else id, else a hash of what identifies the entry (flagged synthetic).

    The synthetic id depends on the entry's position, so it only stays stable while the file
    does; that is the best a record without any id allows.
    """
    found = as_str(conv.get("conversation_id")) or as_str(conv.get("id"))
    if found:
        return found, False
    title = conv.get("title") if isinstance(conv.get("title"), str) else ""
    created = conv.get("create_time")
    return "synthetic-" + sha256_hex(f"{title}|{created!r}|{index}")[:32], True


def _children(node: Any) -> list[str]:
    children = _d(node).get("children")
    return [c for c in children if isinstance(c, str)] if isinstance(children, list) else []


def _parent_of(mapping: dict[str, Any]) -> dict[str, str]:
    """Parent links, from `parent` or, when a node lacks it, from its parent's `children`."""
    parents: dict[str, str] = {}
    for node_id, node in mapping.items():
        for child in _children(node):
            if child in mapping and child != node_id:
                parents.setdefault(child, node_id)
    for node_id, node in mapping.items():
        parent = _d(node).get("parent")
        if isinstance(parent, str) and parent in mapping and parent != node_id:
            parents[node_id] = parent
    return parents


def _fallback_leaf(mapping: dict[str, Any]) -> str | None:
    """Without a usable current_node: the newest leaf that carries a message."""
    best: tuple[float, int] | None = None
    best_id = None
    for order, (node_id, node) in enumerate(mapping.items()):
        node = _d(node)
        if any(c in mapping for c in _children(node)):
            continue
        message = _d(node.get("message"))
        if not message:
            continue
        created = _ts(message.get("create_time"))
        key = (created.timestamp() if created else float("-inf"), order)
        if best is None or key > best:
            best, best_id = key, node_id
    return best_id


def visible_path(mapping: dict[str, Any], current_node: Any) -> tuple[list[str], bool]:
    """Node ids from the root to the visible leaf; the flag says current_node was unusable."""
    start = current_node if isinstance(current_node, str) and current_node in mapping else None
    fallback = start is None
    if start is None:
        start = _fallback_leaf(mapping)
    parents = _parent_of(mapping)
    path: list[str] = []
    seen: set[str] = set()
    node_id = start
    while node_id is not None and node_id not in seen:
        seen.add(node_id)
        path.append(node_id)
        node_id = parents.get(node_id)
    path.reverse()
    return path, fallback


def branch_info(mapping: dict[str, Any], path: list[str]) -> dict[str, Any]:
    """Where the visible thread forks and what it did not take: enough to address the rest."""
    on_path = set(path)
    forks: list[dict[str, Any]] = []
    alternatives = 0
    for i, node_id in enumerate(path):
        children = _children(mapping.get(node_id))
        if len(children) > 1:
            chosen = path[i + 1] if i + 1 < len(path) else None
            others = [c for c in children if c != chosen]
            alternatives += len(others)
            if len(forks) < MAX_BRANCHES_LISTED:
                forks.append({"node_id": node_id, "chosen": chosen, "alternatives": others})
    off_branch = sum(
        1 for node_id, node in mapping.items()
        if node_id not in on_path and isinstance(_d(node).get("message"), dict)
    )
    info: dict[str, Any] = {"branch_points": len(forks), "alternative_branches": alternatives,
                            "off_branch_messages": off_branch}
    if forks:
        info["branches"] = forks
    return info


class _TurnBuilder:
    """Accumulates turns along the visible path, pairing tool calls with their results."""

    def __init__(self, counts: Counter[str]) -> None:
        self.turns: list[Turn] = []
        self.counts = counts
        self.open_call: Turn | None = None
        self.last_code_turn: Turn | None = None
        self.turn_ids: set[str] = set()

    def _unique(self, turn_id: str) -> str:
        candidate, n = turn_id, 1
        while candidate in self.turn_ids:
            n += 1
            candidate = f"{turn_id}#{n}"
        self.turn_ids.add(candidate)
        return candidate

    def call(self, message_id: str, tool: str, rendered: Rendered, ts: datetime | None,
             meta: dict[str, Any]) -> None:
        body = rendered.text
        turn = Turn(
            turn_id=self._unique(message_id), ts=ts, role="tool",
            text=searchable(f"Tool call: {tool}\n{body}".rstrip()),
            tool=ToolCall(name=tool, input=truncate_middle(body, 1500, 500)[0] if body else None),
            attachments=list(rendered.attachments), meta=meta,
        )
        self.turns.append(turn)
        self.open_call = turn
        self.last_code_turn = None

    def result(self, message_id: str, tool: str | None, rendered: Rendered, ts: datetime | None,
               meta: dict[str, Any]) -> None:
        output, omitted = truncate_middle(rendered.text, TOOL_OUTPUT_HEAD, TOOL_OUTPUT_TAIL)
        if omitted:
            self.counts["tool_outputs_truncated"] += 1
        target = self.open_call
        if target is None and self.last_code_turn is not None:
            # Code shown by the assistant without a recipient, then run by a tool: the code was
            # the call (older exports and some hand-made ones omit `recipient`).
            target = self.last_code_turn
            target.role = "tool"
            name = tool or "python"
            target.tool = ToolCall(name=name, input=truncate_middle(target.text, 1500, 500)[0])
            target.text = f"Tool call: {name}\n{target.text}"
            self.open_call = target
        self.last_code_turn = None
        if target is not None:
            if output.strip():
                target.text = searchable(f"{target.text}\n\nResult:\n{output}")
            target.attachments.extend(rendered.attachments)
            target.meta.setdefault("result_message_ids", []).append(message_id)
            if target.ts is None:
                target.ts = ts
            return
        if not output.strip() and not rendered.attachments:
            self.counts["messages_empty"] += 1
            return
        name = tool or "tool"
        self.turns.append(Turn(
            turn_id=self._unique(message_id), ts=ts, role="tool",
            text=searchable(f"Tool result: {name}\n{output}".rstrip()),
            tool=ToolCall(name=name), attachments=list(rendered.attachments), meta=meta,
        ))

    def message(self, message_id: str, role: str, rendered: Rendered, ts: datetime | None,
                meta: dict[str, Any]) -> None:
        self.open_call = None
        if not rendered.text.strip() and not rendered.attachments:
            self.counts["messages_empty"] += 1
            return
        turn = Turn(turn_id=self._unique(message_id), ts=ts, role=role,  # type: ignore[arg-type]
                    text=searchable(rendered.text), attachments=list(rendered.attachments), meta=meta)
        self.turns.append(turn)
        self.last_code_turn = turn if rendered.is_code and role == "assistant" else None


def _message_attachments(meta: dict[str, Any]) -> list[dict[str, Any]]:
    files = meta.get("attachments")
    if not isinstance(files, list):
        return []
    return [f for f in files if isinstance(f, dict)]


def conversation_to_doc(
    conv: Any, *, index: int, path: str, report: ParseReport, member: str | None = None
) -> ConversationDoc | None:
    """Convert one export entry; None (and a count) when it holds nothing to index."""
    counts = report.counts
    if not isinstance(conv, dict):
        counts["entries_not_object"] += 1
        return None
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict) or not mapping:
        counts["entries_without_mapping"] += 1
        return None
    thread_id, synthetic = thread_id_of(conv, index)
    node_path, fallback = visible_path(mapping, conv.get("current_node"))
    if fallback:
        counts["current_node_missing"] += 1

    builder = _TurnBuilder(counts)
    models: Counter[str] = Counter()
    for node_id in node_path:
        message = _d(mapping.get(node_id)).get("message")
        if not isinstance(message, dict):
            continue  # the root (and damaged nodes) carry no message
        meta = _d(message.get("metadata"))
        if _hidden(message, meta):
            counts["messages_hidden"] += 1
            continue
        _add_message(builder, node_id, message, meta, models)

    turns = builder.turns
    if not turns:
        counts["conversations_without_turns"] += 1
        return None
    created = _ts(conv.get("create_time"))
    updated = _ts(conv.get("update_time"))
    fill_times(turns, created)
    created = created or turns[0].ts
    updated = updated or max((t.ts for t in turns if t.ts), default=None) or created
    metadata = _metadata(conv, path=path, index=index, member=member, synthetic=synthetic,
                         models=models, fallback=fallback)
    metadata.update(branch_info(mapping, node_path))
    return ConversationDoc(
        source=SOURCE, source_type=SOURCE_TYPE, source_uri=f"{path}#{thread_id}",
        doc_id=thread_doc_id(SOURCE_TYPE, thread_id), thread_id=thread_id, title=_title(conv, turns),
        created_at=created, updated_at=updated, turns=turns, metadata=json_safe(metadata),
    )


def _hidden(message: dict[str, Any], meta: dict[str, Any]) -> bool:
    """A message the ChatGPT UI does not show (hidden by metadata, or of weight 0)."""
    weight = message.get("weight")
    return meta.get("is_visually_hidden_from_conversation") is True or (
        isinstance(weight, int | float) and not isinstance(weight, bool) and weight == 0
    )


def _add_message(
    builder: _TurnBuilder, node_id: str, message: dict[str, Any], meta: dict[str, Any],
    models: Counter[str],
) -> None:
    """One visible message: a tool call (an assistant message with a recipient), a tool
    result, or a turn of its role (unknown roles become `system`)."""
    author = _d(message.get("author"))
    role = author.get("role") if isinstance(author.get("role"), str) else ""
    name = as_str(author.get("name"))
    rendered = render_content(message.get("content"), meta, builder.counts)
    ctype = _d(message.get("content")).get("content_type")
    message_id = as_str(message.get("id")) or clean_text(node_id)
    ts = _ts(message.get("create_time"))
    turn_meta: dict[str, Any] = {}
    if isinstance(ctype, str) and ctype not in ("text", "multimodal_text"):
        turn_meta["content_type"] = clean_text(ctype[:60])
    model = as_str(meta.get("model_slug"))
    if model:
        turn_meta["model"] = model
        models[model] += 1
    _attach_files(rendered, meta)
    recipient = message.get("recipient")
    if role == "assistant" and isinstance(recipient, str) and recipient not in ("all", ""):
        builder.call(message_id, clean_text(recipient), rendered, ts, turn_meta)
    elif role == "tool":
        builder.result(message_id, name, rendered, ts, turn_meta)
    else:
        if role not in ROLES:
            if role:
                turn_meta["original_role"] = clean_text(role[:40])
            role = "system"
        if ctype == "thoughts":
            turn_meta["thoughts_summary"] = True
        builder.message(message_id, role, rendered, ts, turn_meta)


def _attach_files(rendered: Rendered, meta: dict[str, Any]) -> None:
    """The files uploaded with a message become attachments, and their names searchable text."""
    files = _message_attachments(meta)
    if not files:
        return
    rendered.attachments.extend(
        Attachment(kind="file", name=as_str(f.get("name")), uri=as_str(f.get("id")),
                   mime_type=as_str(f.get("mime_type")),
                   size_bytes=f.get("size") if isinstance(f.get("size"), int)
                   and not isinstance(f.get("size"), bool) and f["size"] >= 0 else None)
        for f in files
    )
    names = [as_str(f.get("name")) for f in files]
    listed = ", ".join(n for n in names if n)
    if listed:
        rendered.text = f"{rendered.text}\n\n[attached: {listed}]".strip()


def _title(conv: dict[str, Any], turns: list[Turn]) -> str | None:
    """The conversation's title, else the first line of its first user message."""
    raw_title = conv.get("title")
    title = clean_text(raw_title).strip() if isinstance(raw_title, str) and raw_title.strip() else None
    if title is None:
        first_user = next((t.text for t in turns if t.role == "user" and t.text.strip()), "")
        title = one_line(first_user) or None
    return title


def _metadata(
    conv: dict[str, Any], *, path: str, index: int, member: str | None, synthetic: bool,
    models: Counter[str], fallback: bool,
) -> dict[str, Any]:
    """Where the entry came from and what the export says about the conversation as a whole."""
    metadata: dict[str, Any] = {"format": "chatgpt_export", "export_file": path, "entry_index": index}
    if member:
        metadata["zip_member"] = member
    if synthetic:
        metadata["thread_id_synthetic"] = True
        metadata["thread_id_note"] = "entry has no conversation_id/id; id = hash(title, create_time, index)"
    default_model = as_str(conv.get("default_model_slug"))
    if default_model or models:
        metadata["model"] = default_model or models.most_common(1)[0][0]
    if models:
        metadata["models"] = sorted(models)
    for key in ("gizmo_id", "gizmo_type", "conversation_template_id", "is_archived", "is_starred",
                "conversation_origin"):
        value = conv.get(key)
        if value is not None:
            metadata[key] = json_safe(value)
    if isinstance(conv.get("current_node"), str):
        metadata["current_node"] = clean_text(conv["current_node"])
    if fallback:
        metadata["current_node_missing"] = True
    return metadata
