"""One Amp thread (`T-<uuid>.json`) as a conversation.

A thread is one JSON object: `id`, `created` (epoch ms), `title`, `messages[]` and `env.initial`
(the workspace trees: the first tree's `file://` uri is the project). Messages are Anthropic-
style: user messages carry text, images and the `tool_result` blocks of the previous assistant
message's `tool_use` calls (`toolUseID` + `run{status, result | error}`); assistant messages
carry text, thinking and tool calls, with `usage.model` and `usage.timestamp`; `info` messages
carry commands the user ran (`manual_bash_invocation`) and summaries. Only user messages are
timed (`meta.sentAt`, ms); an assistant message without usage takes the time of the message
before it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any
from urllib.parse import unquote, urlparse

from chinvex.models import Attachment
from chinvex.timeutil import to_utc
from chinvex_adapters.kit.text import as_str, clean_text
from chinvex_adapters.kit.turns import ConversationBuilder, dump

RESULT_KEYS = ("output", "content", "diff", "text", "result", "message")
"""Where a tool's result object keeps its readable text (Bash `output`, edit_file `diff`...)."""
SKIPPED = frozenset({"redacted_thinking"})


def uri_path(uri: Any) -> str | None:
    """A `file://` workspace uri as a path (percent-decoded; `/C:/x` as `C:/x`)."""
    if not isinstance(uri, str) or not uri:
        return None
    if not uri.startswith("file:"):
        return uri if uri.startswith("/") else None
    path = unquote(urlparse(uri).path)
    if len(path) > 3 and path[0] == "/" and path[2] == ":":
        path = path[1:]
    return path or None


def trees(thread: dict[str, Any]) -> list[dict[str, Any]]:
    env = thread.get("env") if isinstance(thread.get("env"), dict) else {}
    initial = env.get("initial") if isinstance(env.get("initial"), dict) else {}
    found = initial.get("trees")
    return [t for t in found if isinstance(t, dict)] if isinstance(found, list) else []


def result_text(result: Any) -> str:
    """A tool's `run.result` as text: a string as it is, an object by its text-bearing field
    (with a non-zero exit code noted), anything else as JSON."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    if isinstance(result, list):
        return "\n".join(p for p in (result_text(r) for r in result) if p)
    if isinstance(result, dict):
        for key in RESULT_KEYS:
            value = result.get(key)
            if isinstance(value, (str, list)) and value:
                text = result_text(value)
                code = result.get("exitCode")
                if isinstance(code, int) and not isinstance(code, bool) and code != 0:
                    text = f"{text}\n(exit code {code})"
                return text
    return dump(result)


def run_output(run: Any) -> tuple[str, bool, str | None]:
    """(text, is_error, status) of a tool run: done, error, cancelled, rejected-by-user, or a
    state it was left in (in-progress, queued, blocked-on-user)."""
    if isinstance(run, str):
        return f"({run})", False, run
    if not isinstance(run, dict):
        return "", False, None
    status = as_str(run.get("status"))
    if status == "done" or (status is None and "result" in run):
        return result_text(run.get("result")), False, status
    if status == "error":
        error = run.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        return clean_text(str(message or "error")), True, status
    return f"({status or 'no result'})", status == "rejected-by-user", status


class ThreadReader:
    """Feeds a thread's messages, in order, to a ConversationBuilder."""

    def __init__(self, builder: ConversationBuilder, counts: Counter[str]) -> None:
        self.b = builder
        self.counts = counts
        self.requested: set[str] = set()
        self.early: dict[str, tuple[Any, tuple[str, bool, str | None]]] = {}
        self.last_ts: Any = None  # the latest message time seen (results do not make turns)

    def add(self, index: int, message: Any) -> None:
        if not isinstance(message, dict):
            self.counts["messages_malformed"] += 1
            return
        role = message.get("role")
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if role not in ("user", "assistant", "info") or not isinstance(content, list):
            self.counts["messages_malformed"] += 1
            return
        mid = message.get("messageId")
        turn_id = f"m{mid}" if isinstance(mid, int) and not isinstance(mid, bool) else f"i{index}"
        ts, model = self._time_and_model(role, message)
        meta: dict[str, Any] = {}
        state = message.get("state")
        if isinstance(state, dict) and state.get("type") not in (None, "complete"):
            meta["state"] = as_str(state.get("type"))
        if message.get("interrupted") is True:
            meta["interrupted"] = True
        self._blocks("system" if role == "info" else role, turn_id, ts, model, content, meta)

    def _time_and_model(self, role: str, message: dict[str, Any]) -> tuple[Any, str | None]:
        meta = message.get("meta") if isinstance(message.get("meta"), dict) else {}
        usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
        ts = to_utc(meta.get("sentAt")) or to_utc(usage.get("timestamp")) or self.last_ts
        self.last_ts = ts
        model = as_str(usage.get("model")) if role == "assistant" else None
        return ts, model

    def _blocks(self, role: str, turn_id: str, ts: Any, model: str | None, blocks: list[Any],
                meta: dict[str, Any]) -> None:
        texts: list[str] = []
        images: list[Attachment] = []

        def flush() -> None:
            if texts or images:
                self.b.message(role, "\n\n".join(texts), ts=ts, turn_id=turn_id, model=model,
                               attachments=list(images), meta=meta)
                texts.clear()
                images.clear()

        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "image":
                source = block.get("source") if isinstance(block.get("source"), dict) else {}
                images.append(Attachment(kind="image", mime_type=as_str(source.get("mediaType") or block.get("mediaType"))))
                self.counts["images_referenced"] += 1
            else:
                flush()
                self._block(kind, block, ts, turn_id, model)
        flush()

    def _block(self, kind: Any, block: Any, ts: Any, turn_id: str, model: str | None) -> None:
        if kind == "thinking":
            text = block.get("thinking")
            self.b.thinking(text if isinstance(text, str) else "", ts=ts, turn_id=f"{turn_id}:thinking", model=model)
        elif kind == "tool_use":
            self._call(block, ts)
        elif kind == "tool_result":
            self._result(block, ts)
        elif kind == "manual_bash_invocation":
            text, is_error, status = run_output(block.get("toolRun"))
            self.b.tool_call("Bash", block.get("args"), ts=ts, turn_id=f"{turn_id}:bash", output=text,
                             is_error=is_error, status=status, meta={"run_by_user": True})
        elif kind == "summary":
            summary = block.get("summary")
            text = summary.get("summary") if isinstance(summary, dict) else summary
            self.b.message("system", text if isinstance(text, str) else dump(summary), ts=ts,
                           turn_id=f"{turn_id}:summary", meta={"summary": True})
        elif kind in SKIPPED:
            self.counts[f"blocks_skipped:{kind}"] += 1
        else:
            self.counts[f"blocks_unknown:{str(kind)[:40]}"] += 1

    def _call(self, block: dict[str, Any], ts: Any) -> None:
        call_id = as_str(block.get("id"))
        name = as_str(block.get("name")) or "tool"
        meta: dict[str, Any] = {}
        if block.get("complete") is False:
            meta["incomplete"] = True
        text, is_error, status = None, False, None
        if call_id and call_id in self.early:
            _, (text, is_error, status) = self.early.pop(call_id)
            self.counts["tool_results_before_call"] += 1
        self.b.tool_call(name, block.get("input"), ts=ts, call_id=call_id, output=text,
                         is_error=is_error, status=status, meta=meta)
        if call_id:
            self.requested.add(call_id)

    def _result(self, block: dict[str, Any], ts: Any) -> None:
        call_id = as_str(block.get("toolUseID") or block.get("tool_use_id"))
        if "run" in block:
            outcome = run_output(block.get("run"))
        else:  # an Anthropic-style result: its content
            outcome = (result_text(block.get("content")), block.get("is_error") is True, None)
        if call_id and call_id not in self.requested:
            self.early[call_id] = (ts, outcome)
            return
        text, is_error, status = outcome
        turn = self.b.tool_result(text, call_id=call_id, ts=ts, is_error=is_error)
        if status:
            turn.meta.setdefault("status", status)

    def finish(self) -> None:
        for call_id, (ts, (text, is_error, _)) in self.early.items():
            self.b.tool_result(text, call_id=call_id, ts=ts, is_error=is_error)
        self.early.clear()
