"""pi's entries (v1 to v3) as turns: user and assistant messages, thinking, tool calls with
the results pi writes as separate `toolResult` messages (paired by call id), the user's own
`!` shell commands, compaction and branch summaries, and the facts the metadata keeps (models
and thinking levels chosen, cost, why replies stopped, the user-set name).

A file holds every branch of its session tree; all entries are read in file order (each
appears once), so abandoned branches are kept too. An assistant reply that failed or was
aborted before any content is one system turn saying so (repeats of the same failure in a
row are counted, not repeated).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import orjson

from chinvex.models import Attachment
from chinvex_adapters.kit.text import as_str, clean_text
from chinvex_adapters.kit.turns import ConversationBuilder, render_output

from .openclaw import openclaw_marker, unwrap
from .records import Entry

MAX_ERROR_CHARS = 600
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
FAILED_STATUS = frozenset({"error", "forbidden", "failed", "denied", "timeout"})


def _image(block: dict[str, Any], counts: Counter[str]) -> Attachment:
    counts["images_referenced"] += 1
    data = block.get("data")
    size = len(data) * 3 // 4 if isinstance(data, str) else None
    return Attachment(kind="image", mime_type=as_str(block.get("mimeType")), size_bytes=size)


def content_parts(content: Any, counts: Counter[str]) -> tuple[str, list[Attachment]]:
    """The text of a message's content (a string or blocks) and its images as references."""
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    images: list[Attachment] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "image":
            images.append(_image(block, counts))
    return "\n".join(texts), images


def _failed(text: str) -> bool:
    """Tool results that report failure as JSON (`{"status":"error",…}`) with isError false."""
    head = text.lstrip()[:400]
    if not head.startswith("{") or '"status"' not in head or len(text) > 200_000:
        return False
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return isinstance(data, dict) and data.get("status") in FAILED_STATUS


def error_words(error: str) -> str:
    """A provider's error as words: the message inside the JSON envelopes providers nest
    (`{"error":{"message":"{\\n \\"error\\": {…"message": "You exceeded…"`), shortened."""
    text = error.strip()
    for _ in range(4):
        if not text.startswith("{"):
            break
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError:
            break
        inner = data.get("error", data) if isinstance(data, dict) else None
        inner = inner.get("message") if isinstance(inner, dict) else inner
        if not isinstance(inner, str) or not inner.strip():
            break
        text = inner.strip()
    text = clean_text(text)
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + "…"


class PiReader:
    """Feeds entries, in file order, into a ConversationBuilder and keeps the session facts."""

    def __init__(self, counts: Counter[str], cwd: str | None) -> None:
        self.counts = counts
        self.b = ConversationBuilder(counts, cwd=cwd)
        self.model: str | None = None  # the model last selected (model_change, model-snapshot)
        self.name: str | None = None  # session_info: the user's name for the session
        self.openclaw = False
        self.thinking_levels: list[str] = []
        self.providers: Counter[str] = Counter()
        self.stop_reasons: Counter[str] = Counter()
        self.cost = 0.0
        self.compactions = 0
        self.modified_files: dict[str, None] = {}
        self.headers = 0
        self._last_error: tuple[str, int] | None = None

    # -- entries ---------------------------------------------------------------------------
    def feed(self, entry: Entry) -> None:
        data = entry.data
        kind = data.get("type")
        tid = as_str(data.get("id")) or f"l{entry.line_no}"
        ts = data.get("timestamp")
        if not self.openclaw and openclaw_marker(data):
            self.openclaw = True
        if kind == "message":
            message = data.get("message")
            if isinstance(message, dict):
                self._message(message, tid, ts)
            else:
                self.counts["messages_malformed"] += 1
        elif kind == "session":
            self.headers += 1
        elif kind in ("model_change", "custom"):
            self._model(data)
        elif kind == "thinking_level_change":
            level = as_str(data.get("thinkingLevel"))
            if level:
                self.thinking_levels.append(level)
        elif kind == "compaction":
            self._compaction(data, tid, ts)
        elif kind == "branch_summary":
            self._summary(data.get("summary"), tid, ts, {"branch_summary": True,
                                                         "from_id": as_str(data.get("fromId"))})
        elif kind == "custom_message":
            self._custom(data, tid, ts)
        elif kind == "session_info":
            self.name = as_str(data.get("name")) or self.name
        else:
            self.counts[f"entries_{kind}" if kind == "label" else "entries_other_type"] += 1

    def _model(self, data: dict[str, Any]) -> None:
        if data.get("type") == "custom":
            self.counts["custom_entries"] += 1
            snapshot = data.get("data")
            if data.get("customType") != "model-snapshot" or not isinstance(snapshot, dict):
                return
            data = snapshot
        model = as_str(data.get("modelId"))
        if model:
            self.model = model

    def _compaction(self, data: dict[str, Any], tid: str, ts: Any) -> None:
        self.compactions += 1
        details = data.get("details")
        if isinstance(details, dict) and isinstance(details.get("modifiedFiles"), list):
            for path in details["modifiedFiles"]:
                if isinstance(path, str):
                    self.modified_files.setdefault(path, None)
        tokens = data.get("tokensBefore")
        self._summary(data.get("summary"), tid, ts, {"compact_summary": True, "tokens_before": tokens,
                                                     "from_hook": data.get("fromHook")})

    def _summary(self, text: Any, tid: str, ts: Any, meta: dict[str, Any]) -> None:
        if isinstance(text, str) and text.strip():
            self.b.message("system", text, ts=ts, turn_id=tid,
                           meta={k: v for k, v in meta.items() if v is not None})
        else:
            self.counts["summaries_empty"] += 1

    def _custom(self, data: dict[str, Any], tid: str, ts: Any) -> None:
        """Extension messages put in the model's context: kept when the user saw them."""
        if data.get("display") is False:
            self.counts["custom_messages_hidden"] += 1
            return
        text, images = content_parts(data.get("content"), self.counts)
        self.b.message("system", text, ts=ts, turn_id=tid, attachments=images,
                       meta={"custom_type": as_str(data.get("customType"))})

    # -- messages --------------------------------------------------------------------------
    def _message(self, message: dict[str, Any], tid: str, ts: Any) -> None:
        role = message.get("role")
        if ts is None:
            ts = message.get("timestamp")
        if role == "user":
            self._user(message, tid, ts)
        elif role == "assistant":
            self._assistant(message, tid, ts)
        elif role == "toolResult":
            self._tool_result(message, ts)
        elif role == "bashExecution":
            self._bash(message, tid, ts)
        elif role in ("custom", "hookMessage"):
            self._custom(message, tid, ts)
        elif role in ("branchSummary", "compactionSummary"):
            flag = "branch_summary" if role == "branchSummary" else "compact_summary"
            self._summary(message.get("summary"), tid, ts, {flag: True})
        else:
            self.counts["messages_other_role"] += 1

    def _user(self, message: dict[str, Any], tid: str, ts: Any) -> None:
        text, images = content_parts(message.get("content"), self.counts)
        text, wrapping = unwrap(text)
        self.b.message("user", text, ts=ts, turn_id=tid, attachments=images, meta=wrapping)

    def _assistant(self, message: dict[str, Any], tid: str, ts: Any) -> None:
        model = as_str(message.get("model"))
        provider = as_str(message.get("provider"))
        if provider:
            self.providers[provider] += 1
        stop = as_str(message.get("stopReason"))
        if stop:
            self.stop_reasons[stop] += 1
        first = len(self.b.turns)
        self._blocks(message.get("content"), tid, ts, model)
        if len(self.b.turns) == first:
            self._no_reply(message, tid, ts, model, stop)
            return
        self._last_error = None
        head = self.b.turns[first]
        usage = message.get("usage")
        if isinstance(usage, dict):
            head.meta["usage"] = {k: usage[k] for k in ("input", "output", "cacheRead", "cacheWrite",
                                                        "totalTokens") if isinstance(usage.get(k), int)}
            cost = usage.get("cost")
            if isinstance(cost, dict) and isinstance(cost.get("total"), int | float):
                self.cost += float(cost["total"])
        if stop in ("aborted", "error", "length"):
            self.b.turns[-1].meta["stop_reason"] = stop

    def _blocks(self, content: Any, tid: str, ts: Any, model: str | None) -> None:
        if isinstance(content, str):
            self.b.message("assistant", content, ts=ts, turn_id=tid, model=model)
            return
        n = 0
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            block_id = tid if n == 0 else f"{tid}.{n}"
            if kind == "text":
                turn = self.b.message("assistant", as_str(block.get("text")), ts=ts, turn_id=block_id,
                                      model=model)
            elif kind == "thinking":
                if block.get("redacted") is True:
                    self.counts["thinking_redacted"] += 1
                turn = self.b.thinking(as_str(block.get("thinking")), ts=ts, turn_id=block_id,
                                       model=model)
            elif kind == "toolCall":
                args = block.get("arguments")
                if args is None and isinstance(block.get("partialJson"), str):
                    args = block["partialJson"]
                turn = self.b.tool_call(as_str(block.get("name")), args, ts=ts,
                                        call_id=as_str(block.get("id")))
            elif kind == "image":
                turn = self.b.message("assistant", "", ts=ts, turn_id=block_id, model=model,
                                      attachments=[_image(block, self.counts)])
            else:
                self.counts["blocks_other_type"] += 1
                turn = None
            n += 1 if turn is not None else 0

    def _no_reply(self, message: dict[str, Any], tid: str, ts: Any, model: str | None,
                  stop: str | None) -> None:
        """A reply with no content: an error or an abort, kept as one system turn (the same
        failure again right after it is only counted)."""
        error = error_words(as_str(message.get("errorMessage")) or "")
        if not error and stop not in ("error", "aborted"):
            self.counts["replies_empty"] += 1
            return
        # Retries of one failure differ in their delays and detail lines: the first line decides.
        key = f"{stop}:{_DIGITS.sub('#', error.split(chr(10), 1)[0])}"
        if self._last_error is not None and self._last_error == (key, len(self.b.turns)):
            self.counts["failed_replies_repeated"] += 1
            return
        self.counts["failed_replies"] += 1
        words = f"Assistant reply {stop or 'failed'}" + (f": {error}" if error else "")
        meta = {"stop_reason": stop, "failed_reply": True, **({"model": model} if model else {})}
        self.b.message("system", words, ts=ts, turn_id=tid, meta=meta)
        self._last_error = (key, len(self.b.turns))

    def _tool_result(self, message: dict[str, Any], ts: Any) -> None:
        text, images = content_parts(message.get("content"), self.counts)
        if images:
            marks = [f"[image: {a.mime_type or 'unknown type'}]" for a in images]
            text = "\n".join([text, *marks]) if text else "\n".join(marks)
        failed = message.get("isError") is True or _failed(text)
        self.b.tool_result(text, call_id=as_str(message.get("toolCallId")),
                           name=as_str(message.get("toolName")), ts=ts, is_error=failed)

    def _bash(self, message: dict[str, Any], tid: str, ts: Any) -> None:
        """A command the user ran with `!` in pi's editor (not the model's)."""
        code = message.get("exitCode")
        output = message.get("output")
        failed = message.get("cancelled") is True or (isinstance(code, int) and code != 0)
        meta = {"by_user": True, "exit_code": code if isinstance(code, int) else None,
                "exclude_from_context": message.get("excludeFromContext") is True or None}
        self.b.tool_call("bash", {"command": message.get("command")}, ts=ts, turn_id=f"{tid}:bash",
                         output=render_output(output) if output is not None else "", is_error=failed,
                         meta={k: v for k, v in meta.items() if v is not None})
