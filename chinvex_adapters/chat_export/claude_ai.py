"""claude.ai data exports: `conversations.json` (alone or in the export zip) is an array of
conversations, each with `uuid`, `name`, `created_at`/`updated_at` and `chat_messages`.

Two message shapes are read: the older one keeps a message's words in `text` only; the newer
one adds `content[]` blocks (text, thinking, tool_use, tool_result, each with its own
timestamps), which then carry everything and `text` repeats them. `sender` is `human` or
`assistant`. Pasted files arrive as `attachments` with their `extracted_content`; uploads as
`files` (names only). The conversation id is the export's `uuid`, stable across re-exports, so
a conversation exported twice is indexed once (as ChatGPT's are).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from chinvex.ids import sha256_hex, thread_doc_id
from chinvex.models import Attachment, ConversationDoc
from chinvex.models.sources import ParseReport
from chinvex.timeutil import to_utc
from chinvex_adapters.chat_export.claude_markup import split_markup
from chinvex_adapters.kit.edits import MAX_EDIT_CHARS, FileEdit
from chinvex_adapters.kit.text import as_str, clean_text, json_safe, one_line, truncate_middle
from chinvex_adapters.kit.turns import ConversationBuilder

SOURCE = "claude_ai"
SOURCE_TYPE = "chat"
ATTACHMENT_TEXT = (2000, 1000)


def is_claude_conversation(entry: Any) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("chat_messages"), list)


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def thread_id_of(conv: dict[str, Any], index: int) -> tuple[str, bool]:
    found = as_str(conv.get("uuid")) or as_str(conv.get("id"))
    if found:
        return found, False
    return "synthetic-" + sha256_hex(f"{conv.get('name')!r}|{conv.get('created_at')!r}|{index}")[:32], True


def _attachments(message: dict[str, Any]) -> tuple[list[Attachment], list[str]]:
    """Attachments as references, and the words of pasted files (their extracted text, head
    and tail kept) to add to the message."""
    refs: list[Attachment] = []
    texts: list[str] = []
    for item in message.get("attachments") or ():
        if not isinstance(item, dict):
            continue
        name = as_str(item.get("file_name"))
        size = item.get("file_size")
        refs.append(Attachment(kind="file", name=name, mime_type=as_str(item.get("file_type")),
                               size_bytes=size if isinstance(size, int) and not isinstance(size, bool) else None))
        extracted = item.get("extracted_content")
        if isinstance(extracted, str) and extracted.strip():
            body, _ = truncate_middle(clean_text(extracted).strip(), *ATTACHMENT_TEXT)
            texts.append(f"[attachment: {name or 'file'}]\n{body}")
    for item in message.get("files") or message.get("files_v2") or ():
        if isinstance(item, dict):
            kind = "image" if str(item.get("file_kind") or "").lower() == "image" else "file"
            refs.append(Attachment(kind=kind, name=as_str(item.get("file_name")),
                                   uri=as_str(item.get("file_uuid"))))
    return refs, texts


def _add_message(b: ConversationBuilder, message: dict[str, Any], counts: Counter[str]) -> None:
    sender = message.get("sender")
    role = "user" if sender == "human" else "assistant" if sender == "assistant" else None
    if role is None:
        counts[f"messages_unknown_sender:{str(sender)[:20]}"] += 1
        role = "user"
    mid = as_str(message.get("uuid"))
    ts = message.get("created_at")
    refs, pasted = _attachments(message)
    blocks = message.get("content")
    if not isinstance(blocks, list) or not blocks:
        text = message.get("text") if isinstance(message.get("text"), str) else ""
        if role == "assistant" and "<ant" in text:
            _add_marked_up(b, text, ts, mid, counts)
            text = ""
        if text.strip() or pasted or refs:
            b.message(role, "\n\n".join([text, *pasted]).strip(), ts=ts, turn_id=mid, attachments=refs)
        return
    words: list[str] = []
    words_start: Any = None

    def flush(*, last: bool = False) -> None:
        """The words so far as one turn, at the time their first block started (else the
        message's); the message's files go with its last words."""
        nonlocal refs, words_start
        if words or (last and refs):
            b.message(role, "\n\n".join(words), ts=words_start or ts, turn_id=mid,
                      attachments=refs if last else [])
            words.clear()
            words_start = None
            if last:
                refs = []

    def add_words(block: dict[str, Any]) -> None:
        nonlocal words_start
        if isinstance(block.get("text"), str):
            words.append(block["text"])
            words_start = words_start or block.get("start_timestamp") or None

    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        stamp = block.get("start_timestamp") or ts
        if kind == "text":
            add_words(block)
        elif kind == "thinking":
            flush()
            thought = block.get("thinking")
            b.thinking(thought if isinstance(thought, str) else None, ts=stamp,
                       turn_id=f"{mid}:thinking" if mid else None)
        elif kind == "tool_use":
            flush()
            b.tool_call(as_str(block.get("name")), block.get("input"), ts=stamp,
                        call_id=as_str(block.get("id")))
        elif kind == "tool_result":
            flush()
            b.tool_result(block.get("content"), call_id=as_str(block.get("tool_use_id")),
                          name=as_str(block.get("name")), ts=stamp,
                          is_error=block.get("is_error") is True)
        elif kind == "token_budget":
            continue  # a marker between tool calls: nothing to read
        else:
            counts[f"blocks_unknown:{str(kind)[:40]}"] += 1
            add_words(block)
    words.extend(pasted)
    flush(last=True)


def _add_marked_up(b: ConversationBuilder, text: str, ts: Any, mid: str | None, counts: Counter[str]) -> None:
    """An older reply with inline reasoning and artifacts (claude_markup): its words as
    assistant turns, the reasoning as thinking, each artifact version as a write of it."""
    for piece in split_markup(text):
        if piece.kind == "text":
            b.message("assistant", piece.text, ts=ts, turn_id=mid)
        elif piece.kind == "thinking":
            b.thinking(piece.text, ts=ts, turn_id=f"{mid}:thinking" if mid else None)
        else:
            name = piece.attrs.get("identifier") or piece.attrs.get("title") or "artifact"
            body = piece.text[:MAX_EDIT_CHARS]
            edit = FileEdit(path=name, op="write", new_text=body, truncated=len(piece.text) > MAX_EDIT_CHARS)
            b.tool_call("artifact", {**piece.attrs, "content": piece.text}, ts=ts, edits=[edit],
                        turn_id=f"{mid}:artifact" if mid else None)
            counts["artifacts_inline"] += 1


ROOT_PARENT = "00000000-0000-4000-8000-000000000000"


def in_time_order(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Older exports list a conversation's messages out of order (a later request can come
    first); their times order them, and a request and its reply, which share one time to the
    microsecond, keep the request first. Left as they are when a message has no readable time."""
    stamps = [to_utc(m.get("created_at")) for m in messages]
    if any(stamp is None for stamp in stamps):
        return messages
    order = sorted(range(len(messages)), key=lambda i: (stamps[i], messages[i].get("sender") != "human", i))
    return [messages[i] for i in order]


def visible_branch(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The messages of the branch the user saw last, in order, and how many were left on other
    branches. An edited or regenerated message starts a sibling branch (`parent_message_uuid`);
    the export keeps every branch and does not say which one is shown, so the chain ending at
    the latest message is taken. Without parent ids (older exports) the thread is the list in
    time order."""
    by_id = {m["uuid"]: m for m in messages if isinstance(m.get("uuid"), str)}
    if not any(isinstance(m.get("parent_message_uuid"), str) for m in messages) or len(by_id) != len(messages):
        return in_time_order(messages), 0
    parents = {m.get("parent_message_uuid") for m in messages}
    leaves = [m for m in messages if m["uuid"] not in parents]
    leaf = max(leaves, key=lambda m: (str(m.get("created_at") or ""), messages.index(m)))
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    node: dict[str, Any] | None = leaf
    while node is not None and node["uuid"] not in seen:
        seen.add(node["uuid"])
        chain.append(node)
        parent = node.get("parent_message_uuid")
        node = by_id.get(parent) if isinstance(parent, str) and parent != ROOT_PARENT else None
    chain.reverse()
    return chain, len(messages) - len(chain)


def claude_conversation_to_doc(conv: Any, *, index: int, path: str, report: ParseReport,
                               member: str | None = None) -> ConversationDoc | None:
    """One export entry as a conversation; None (counted) when it holds no message."""
    counts = report.counts
    if not is_claude_conversation(conv):
        counts["entries_without_chat_messages"] += 1
        return None
    thread_id, synthetic = thread_id_of(conv, index)
    b = ConversationBuilder(counts)
    messages = [m for m in conv["chat_messages"] if isinstance(m, dict)]
    if len(messages) != len(conv["chat_messages"]):
        counts["messages_not_object"] += len(conv["chat_messages"]) - len(messages)
    branch, off_branch = visible_branch(messages)
    if off_branch:
        counts["messages_off_branch"] += off_branch
    for message in branch:
        _add_message(b, message, counts)
    created = to_utc(conv.get("created_at"))
    turns = b.finish(created)
    if not turns:
        counts["conversations_without_turns"] += 1
        return None
    updated = to_utc(conv.get("updated_at")) or max((t.ts for t in turns if t.ts), default=None)
    name = conv.get("name")
    title = clean_text(name).strip() if isinstance(name, str) and name.strip() else None
    if title is None:
        title = one_line(next((t.text for t in turns if t.role == "user"), "")) or None
    metadata: dict[str, Any] = {"format": "claude_ai_export", "export_file": path, "entry_index": index}
    if member:
        metadata["zip_member"] = member
    if synthetic:
        metadata["thread_id_synthetic"] = True
    for key in ("summary", "model", "project_uuid", "is_starred"):
        if conv.get(key) not in (None, ""):
            metadata[key] = json_safe(conv[key])
    account = _d(conv.get("account")).get("uuid")
    if isinstance(account, str):
        metadata["account_uuid"] = account
    return ConversationDoc(
        source=SOURCE, source_type=SOURCE_TYPE, source_uri=f"{path}#{thread_id}",
        doc_id=thread_doc_id(SOURCE_TYPE, thread_id), thread_id=thread_id, title=title,
        created_at=created or turns[0].ts, updated_at=updated, turns=turns,
        metadata=json_safe(metadata),
    )
