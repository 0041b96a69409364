"""`ui_messages.json`: the task as the extension's panel showed it (ClineMessage records).

The API history holds the conversation; the UI records add what it lacks: when things
happened (Cline's API messages carry no time), the model's reasoning in XML-era Roo, API usage
and cost, and the part of a task that a destructive context condense removed from the API
history. A task with no API history at all is read from these records alone.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chinvex.models import Attachment
from chinvex_adapters.kit.edits import FileEdit, resolve
from chinvex_adapters.kit.jsonl import loads_lenient
from chinvex_adapters.kit.turns import ConversationBuilder

from .edits import diff_edits

SKIPPED_SAYS = frozenset({"api_req_started", "api_req_finished", "api_req_retried",
                          "api_req_retry_delayed", "api_req_rate_limit_wait", "api_req_deleted",
                          "checkpoint_saved", "checkpoint_created", "mcp_server_request_started",
                          "deleted_api_reqs", "task_progress", "hook_status", "hook_output_stream",
                          "subagent_usage", "shell_integration_warning", "info",
                          "shell_integration_warning_with_suggestion", "too_many_tools_warning"})
SKIPPED_ASKS = frozenset({"resume_task", "resume_completed_task", "api_req_failed",
                          "mistake_limit_reached", "auto_approval_max_req_reached",
                          "completion_result", "browser_action_launch"})
EDIT_TOOLS = frozenset({"newFileCreated", "editedExistingFile", "appliedDiff", "insertContent",
                        "searchAndReplace"})
"""UI tool kinds that changed a file (their `content` or `diff` is what was written)."""
OUTPUT_TOOLS = frozenset({"listFilesTopLevel", "listFilesRecursive", "searchFiles", "codebaseSearch",
                          "listCodeDefinitionNames", "fetchInstructions"})
"""UI tool kinds whose `content` is what the tool returned (elsewhere it is the tool's input)."""
USAGE_KEYS = ("tokensIn", "tokensOut", "cacheWrites", "cacheReads", "cost")


def _json(text: Any) -> Any:
    if not isinstance(text, str) or not text.startswith(("{", "[")):
        return None
    try:
        return loads_lenient(text.encode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError, UnicodeError):
        return None


@dataclass
class UiFacts:
    """The records (the last version of each `ts`) and what is read from them once."""

    records: list[dict[str, Any]]
    stamps: list[int] = field(default_factory=list)  # the records' ts, in order
    requests: list[int] = field(default_factory=list)  # ts of each api_req_started
    usage: dict[str, float] = field(default_factory=dict)
    models: list[str] = field(default_factory=list)
    first_text: str | None = None
    condensed: int = 0


def read_ui(raw: list[Any], counts: Counter[str]) -> UiFacts:
    """Records keyed by their `ts` (a streamed record is rewritten under the same ts; the last
    version wins), with their order kept."""
    by_ts: dict[int, dict[str, Any]] = {}
    for record in raw:
        ts = record.get("ts") if isinstance(record, dict) else None
        if not isinstance(ts, int | float) or isinstance(ts, bool):
            counts["ui_records_malformed"] += 1
            continue
        by_ts[int(ts)] = {**record, **{k: v if isinstance(v, str) else None for k, v in
                                       ((k, record.get(k)) for k in ("type", "say", "ask", "text"))}}
    records = sorted(by_ts.values(), key=lambda r: r["ts"])  # in time order, as written
    facts = UiFacts(records=records, stamps=[int(r["ts"]) for r in records])
    usage: Counter[str] = Counter()
    for record in records:
        kind = record.get("say")
        if kind == "api_req_started":
            facts.requests.append(int(record["ts"]))
            info = _json(record.get("text"))
            if isinstance(info, dict):
                for key in USAGE_KEYS:
                    value = info.get(key)
                    if isinstance(value, int | float) and not isinstance(value, bool):
                        usage[key] += value
        elif kind in ("text", "task") and facts.first_text is None and record["text"]:
            facts.first_text = record["text"]
        elif kind == "condense_context":
            facts.condensed += 1
        model = record.get("modelInfo")
        if isinstance(model, dict) and isinstance(model.get("modelId"), str):
            if model["modelId"] not in facts.models:
                facts.models.append(model["modelId"])
    facts.usage = {k: round(v, 6) if k == "cost" else int(v) for k, v in usage.items()}
    return facts


def request_times(facts: UiFacts) -> tuple[list[int], list[int]]:
    """For API messages without a time (Cline): the k-th user message was sent by the k-th
    API request; the reply to it began with the first record after that request."""
    replies: list[int] = []
    for n, sent in enumerate(facts.requests):
        nxt = facts.requests[n + 1] if n + 1 < len(facts.requests) else None
        at = bisect.bisect_right(facts.stamps, sent)
        reply = sent
        while at < len(facts.records):
            record = facts.records[at]
            if nxt is not None and facts.stamps[at] >= nxt:
                break
            if record.get("say") not in SKIPPED_SAYS:
                reply = facts.stamps[at]
                break
            at += 1
        replies.append(reply)
    return facts.requests, replies


def between(facts: UiFacts, after: int | None, before: int | None) -> list[dict[str, Any]]:
    """The records with after < ts < before (either bound may be open)."""
    lo = 0 if after is None else bisect.bisect_right(facts.stamps, after)
    hi = len(facts.stamps) if before is None else bisect.bisect_left(facts.stamps, before)
    return facts.records[lo:hi]


class UiReader:
    """UI records as turns: for a task without API history, and for the stretch a condense
    removed from it."""

    def __init__(self, b: ConversationBuilder, *, first_is_task: bool,
                 say: Callable[[str, Any, str], None] | None = None) -> None:
        self.b = b
        self.first_is_task = first_is_task
        self.say = say or (lambda text, ts, tid: b.message("user", text, ts=ts, turn_id=tid) and None)
        self._output: list[str] = []  # the running command's output chunks
        self._output_ts: Any = None

    def add(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            try:
                self._one(record)
            except (TypeError, ValueError, AttributeError):
                self.b.counts["ui_records_malformed"] += 1
        self._end_output()

    def _command_output(self, text: str, ts: Any) -> None:
        """One chunk of a command's output. Cline streams a command's output as several
        `command_output` records (a real task had 62 for 28 commands); they are one result, as
        the extension shows them (joined by new lines), not one result per chunk, of which all
        but the first would find no call."""
        if text.strip():
            self._output.append(text)
        self._output_ts = ts if ts is not None else self._output_ts

    def _end_output(self) -> None:
        if self._output:
            self.b.tool_result("\n".join(self._output), name="execute_command", ts=self._output_ts)
        self._output, self._output_ts = [], None

    def _one(self, record: dict[str, Any]) -> None:
        b, ts = self.b, record.get("ts")
        text = record.get("text") if isinstance(record.get("text"), str) else ""
        kind = record.get("say") or record.get("ask")
        is_say = record.get("type") == "say"
        if (is_say and kind in SKIPPED_SAYS) or (not is_say and kind in SKIPPED_ASKS):
            return
        if kind == "command_output":
            self._command_output(text, ts)
            return
        self._end_output()
        if kind in ("text", "task") and is_say:
            role = "user" if self.first_is_task else "assistant"
            self.first_is_task = False
            b.message(role, text, ts=ts, turn_id=f"ui{ts}", attachments=_images(record))
        elif kind == "user_feedback":
            images = _images(record)
            if images:
                b.message("user", text, ts=ts, turn_id=f"ui{ts}", attachments=images)
            else:
                self.say(text, ts, f"ui{ts}")
        elif kind == "reasoning":
            b.thinking(text, ts=ts, turn_id=f"ui{ts}")
        elif kind in ("completion_result", "plan_completion_result") and is_say:
            b.message("assistant", text, ts=ts, turn_id=f"ui{ts}")
        elif kind in ("followup", "plan_mode_respond", "act_mode_respond"):
            data = _json(text)
            words = data.get("question") or data.get("response") if isinstance(data, dict) else text
            b.message("assistant", words if isinstance(words, str) else text, ts=ts, turn_id=f"ui{ts}")
        elif kind == "tool":
            self._tool(_json(text), ts)
        elif kind == "command":
            b.tool_call("execute_command", {"command": text}, ts=ts, turn_id=f"ui{ts}")
        elif kind in ("use_mcp_server",):
            data = _json(text)
            b.tool_call("use_mcp_tool", data if isinstance(data, dict) else text, ts=ts, turn_id=f"ui{ts}")
        elif kind == "mcp_server_response":
            b.tool_result(text, name="use_mcp_tool", ts=ts)
        elif kind == "subtask_result":
            b.tool_result(text, name="newTask", ts=ts)
        elif kind == "condense_context":
            summary = (record.get("contextCondense") or {}).get("summary")
            b.message("assistant", summary, ts=ts, turn_id=f"ui{ts}", meta={"condense_summary": True})
        elif kind in ("error", "diff_error"):
            b.message("system", text, ts=ts, turn_id=f"ui{ts}", meta={"error": kind})
        else:
            b.counts[f"ui_records_passed_over:{kind}"[:60]] += 1

    def _tool(self, data: Any, ts: Any) -> None:
        if not isinstance(data, dict) or not isinstance(data.get("tool"), str):
            self.b.counts["ui_records_malformed"] += 1
            return
        name = data["tool"]
        args = {k: v for k, v in data.items() if k != "tool"}
        output = args.pop("content", None) if name in OUTPUT_TOOLS else None
        self.b.tool_call(name, args, ts=ts, turn_id=f"ui{ts}", edits=_ui_edits(name, data, self.b.cwd),
                         output=output if isinstance(output, str) and output else None)


def _ui_edits(name: str, data: dict[str, Any], cwd: str | None) -> list[FileEdit]:
    path = data.get("path")
    if name not in EDIT_TOOLS or not isinstance(path, str):
        return []
    diff, content = data.get("diff"), data.get("content")
    if isinstance(diff, str) and ("SEARCH" in diff):
        return diff_edits(path, diff, cwd)
    if isinstance(content, str):
        op = "write" if name == "newFileCreated" else "edit"
        return [FileEdit(path=path, op=op, new_text=content, abs_path=resolve(path, cwd))]
    return []


def _images(record: dict[str, Any]) -> list[Attachment]:
    """Images the user attached, as references (their data: URLs are never kept)."""
    images = record.get("images")
    out = []
    for image in images if isinstance(images, list) else []:
        if isinstance(image, str):
            mime = image[5:].split(";", 1)[0] if image.startswith("data:") else None
            out.append(Attachment(kind="image", mime_type=mime or None,
                                  uri=None if image.startswith("data:") else image))
    files = record.get("files")
    for path in files if isinstance(files, list) else []:
        if isinstance(path, str):
            out.append(Attachment(kind="file", path=path, name=path.rsplit("/", 1)[-1]))
    return out
