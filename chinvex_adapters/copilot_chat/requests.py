"""A chat session's requests as turns: each request is the user's prompt, then the answer.

The answer is read from Copilot's own record of the model's rounds when the request has one
(`result.metadata.toolCallRounds`: each round's text and its tool calls with their real names
and JSON arguments, outputs in `toolCallResults`), else from the response parts VS Code shows
(markdown, thinking, tool invocations by their UI names, without arguments). Edits VS Code
applied (`textEditGroup`) go to the call that made them (`insert_edit_into_file` gives only a
fragment with `...existing code...` markers: the applied text replaces it), and those no
call claims to the request's last reply.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import orjson

from chinvex.models import Turn
from chinvex.timeutil import to_utc
from chinvex_adapters.kit.edits import FileEdit, edits_from_call, tool_key
from chinvex_adapters.kit.text import as_str
from chinvex_adapters.kit.turns import ConversationBuilder

from .parts import (attachments, edit_group, model_of, prompt, reference_name, text_of,
                    thinking_text, tool_output)

FRAGMENT_TOOLS = frozenset({"insert_edit_into_file", "edit_file"})
"""Edit tools whose arguments hold a fragment, not the text written."""
SKIPPED_PARTS = frozenset({"prepareToolInvocation", "undoStop", "codeblockUri", "mcpServersStarting",
                           "progressMessage", "progressTaskSerialized", "clearToPreviousToolInvocation"})
_EMPTY_FENCE = re.compile(r"\n?(`{3,})[^\n`]*\n\s*\1[ \t]*(?:\n|$)")
"""A code block left empty where VS Code showed an applied edit (a `textEditGroup`)."""
STATES = {0: "pending", 1: "complete", 2: "cancelled", 3: "failed", 4: "needs_input"}


def _ms_after(start: datetime | None, value: Any) -> datetime | None:
    if start is None or not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        return None
    return start + timedelta(milliseconds=value)


def _arguments(value: Any) -> Any:
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


class RequestTurns:
    """Feeds a session's requests in order into one ConversationBuilder."""

    def __init__(self, counts: Counter[str], cwd: str | None) -> None:
        self.counts = counts
        self.cwd = cwd
        self.b = ConversationBuilder(counts, cwd=cwd)
        self.versions: list[str] = []
        self.participants: list[str] = []
        self.modes: list[str] = []
        self.states: Counter[str] = Counter()
        self.tokens: Counter[str] = Counter()

    def feed(self, request: dict[str, Any], fallback: datetime | None) -> None:
        start = to_utc(request.get("timestamp")) or fallback
        rid = as_str(request.get("requestId"))
        result = request.get("result") if isinstance(request.get("result"), dict) else {}
        metadata = result.get("metadata") if isinstance(result.get("metadata"), dict) else {}
        timings = result.get("timings") if isinstance(result.get("timings"), dict) else {}
        state = self._state(request, result)
        end = (to_utc((request.get("modelState") or {}).get("completedAt"))
               if isinstance(request.get("modelState"), dict) else None)
        end = end or _ms_after(start, timings.get("totalElapsed")) or start
        first = _ms_after(start, timings.get("firstProgress")) or end
        self._facts(request, result, metadata)
        meta = {k: v for k, v in (("participant", self._participant(request)),
                                  ("response_state", state if state != "complete" else None)) if v}
        self.b.message("user", prompt(request.get("message")), ts=start, turn_id=rid, meta=meta,
                       attachments=attachments(request.get("variableData"), self.counts))
        model = model_of(request)
        parts = request.get("response")
        parts = parts if isinstance(parts, list) else ([parts] if parts else [])
        groups = [g for p in parts if isinstance(p, dict) and p.get("kind") == "textEditGroup"
                  if (g := edit_group(p, self.cwd)) is not None]
        mark = len(self.b.turns)
        rounds = metadata.get("toolCallRounds")
        if isinstance(rounds, list) and any(isinstance(r, dict) for r in rounds):
            results = metadata.get("toolCallResults")
            self._rounds(rounds, results if isinstance(results, dict) else {}, parts, groups,
                         (first, end), model, rid)
        else:
            self._parts(parts, (first, end), model, rid)
        self._leftover(groups, self.b.turns[mark:], end, rid)
        error = result.get("errorDetails")
        if isinstance(error, dict) and as_str(error.get("message")):
            self.b.message("system", f"Error: {error['message']}", ts=end,
                           turn_id=f"{rid}:error" if rid else None, meta={"error": True})

    # -- request facts ---------------------------------------------------------------------
    def _state(self, request: dict[str, Any], result: dict[str, Any]) -> str:
        model_state = request.get("modelState")
        value = model_state.get("value") if isinstance(model_state, dict) else None
        state = STATES.get(value) if isinstance(value, int) else None
        if state is None:
            state = "cancelled" if request.get("isCanceled") else (
                "failed" if isinstance(result.get("errorDetails"), dict) else "complete")
        self.states[state] += 1
        return state

    @staticmethod
    def _participant(request: dict[str, Any]) -> str | None:
        agent = request.get("agent")
        name = as_str(agent.get("id")) if isinstance(agent, dict) else None
        command = request.get("slashCommand")
        if isinstance(command, dict) and as_str(command.get("name")):
            name = f"{name or ''} /{command['name']}".strip()
        return name

    def _facts(self, request: dict[str, Any], result: dict[str, Any], metadata: dict[str, Any]) -> None:
        agent = request.get("agent") if isinstance(request.get("agent"), dict) else {}
        version = as_str(agent.get("extensionVersion"))
        if version and version not in self.versions:
            self.versions.append(version)
        participant = self._participant(request)
        if participant and participant not in self.participants:
            self.participants.append(participant)
        mode = request.get("modeInfo")
        mode_name = as_str(mode.get("kind") or mode.get("modeId")) if isinstance(mode, dict) else None
        if mode_name and mode_name not in self.modes:
            self.modes.append(mode_name)
        usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
        for key, source in (("prompt_tokens", usage.get("promptTokens", metadata.get("promptTokens"))),
                            ("output_tokens", usage.get("completionTokens", metadata.get("outputTokens")))):
            if isinstance(source, int) and not isinstance(source, bool):
                self.tokens[key] += source

    # -- the model's rounds ----------------------------------------------------------------
    def _rounds(self, rounds: list[Any], results: dict[str, Any], parts: list[Any],
                groups: list[FileEdit], times: tuple[datetime | None, datetime | None],
                model: str | None, rid: str | None) -> None:
        first, end = times
        if not any(isinstance(r, dict) and r.get("thinking") for r in rounds):
            for part in parts:
                if isinstance(part, dict) and part.get("kind") == "thinking":
                    self.b.thinking(thinking_text(part.get("value")), ts=first, model=model)
        for n, round_ in enumerate(rounds):
            if not isinstance(round_, dict):
                self.counts["tool_rounds_invalid"] += 1
                continue
            ts = end if n == len(rounds) - 1 else first
            base = f"{rid}:r{n}" if rid else None
            thought = thinking_text(round_.get("thinking"))
            if thought.strip():
                self.b.thinking(thought, ts=ts, turn_id=f"{base}:thinking" if base else None, model=model)
            text = text_of(round_.get("response"))
            self.b.message("assistant", text, ts=ts, turn_id=base, model=model)
            for call in round_.get("toolCalls") or ():
                if not isinstance(call, dict):
                    continue
                name = as_str(call.get("name")) or "tool"
                args = _arguments(call.get("arguments"))
                call_id = as_str(call.get("id"))
                output = tool_output(results.get(call_id)) if call_id else None
                self.b.tool_call(name, args, ts=first, call_id=call_id, output=output,
                                 edits=self._call_edits(name, args, groups))

    def _call_edits(self, name: str, args: Any, groups: list[FileEdit]) -> list[FileEdit]:
        """A call's edits: from its arguments (the kit knows Copilot's tools; a multi-replace
        lists its files inside `replacements`), the applied text for a fragment tool. The
        groups of the files it edited are claimed."""
        key = tool_key(name)
        if key == "multi_replace_string_in_file" and isinstance(args, dict):
            found = [e for item in args.get("replacements") or () if isinstance(item, dict)
                     for e in edits_from_call("replace_string_in_file", item, self.cwd)]
        else:
            found = edits_from_call(name, args, self.cwd)
        if not found:
            return []
        out: list[FileEdit] = []
        for edit in found:
            claimed = self._claim(groups, edit.abs_path or edit.path)
            if key not in FRAGMENT_TOOLS:
                out.append(edit)
            elif claimed:
                out.extend(claimed)
            else:  # a fragment is no whole file: an edit whose replaced text is unknown
                out.append(FileEdit(edit.path, "edit", None, edit.new_text, edit.abs_path, edit.truncated))
        return out

    @staticmethod
    def _claim(groups: list[FileEdit], path: str) -> list[FileEdit]:
        claimed = [g for g in groups if (g.abs_path or g.path) == path]
        for group in claimed:
            groups.remove(group)
        return claimed

    # -- the parts VS Code shows -----------------------------------------------------------
    def _parts(self, parts: list[Any], times: tuple[datetime | None, datetime | None],
               model: str | None, rid: str | None) -> None:
        first, end = times
        text: list[str] = []
        mark = len(self.b.turns)

        def flush() -> None:
            body = "".join(text)
            if "```" in body:
                body = _EMPTY_FENCE.sub("\n", body)
            text.clear()
            if body.strip():
                self.b.message("assistant", body, ts=first, model=model)

        for part in parts:
            if isinstance(part, str):
                text.append(part)
                continue
            if not isinstance(part, dict):
                continue
            kind = part.get("kind")
            if kind is None or kind in ("markdownContent", "markdownVuln"):
                text.append(text_of(part))
            elif kind == "inlineReference":
                text.append(reference_name(part))
            elif kind == "thinking":
                flush()
                self.b.thinking(thinking_text(part.get("value")), ts=first, model=model)
            elif kind == "toolInvocationSerialized":
                if part.get("presentation") != "hidden":
                    flush()
                self._invocation(part, first)
            elif kind == "warning":
                flush()
                self.b.message("system", f"Warning: {text_of(part.get('content'))}", ts=first)
            elif kind != "textEditGroup":
                self.counts[f"parts_skipped:{str(kind)[:40]}"] += 0 if kind in SKIPPED_PARTS else 1
        flush()
        replies = [t for t in self.b.turns[mark:] if t.role == "assistant" and not t.meta.get("thinking")]
        if replies:
            replies[-1].ts = end

    def _invocation(self, part: dict[str, Any], ts: datetime | None) -> None:
        """A tool as VS Code showed it: its UI id, what it said it did, no arguments."""
        if part.get("presentation") == "hidden":
            self.counts["hidden_tool_invocations"] += 1  # edit plumbing; the edits are groups
            return
        args: dict[str, Any] = {}
        message = text_of(part.get("invocationMessage"))
        if message.strip():
            args["message"] = message
        data = part.get("toolSpecificData")
        if isinstance(data, dict) and data.get("kind") == "terminal":
            command = data.get("commandLine")
            line = command.get("original") if isinstance(command, dict) else command
            if isinstance(line, str):
                args["command"] = line
        done = text_of(part.get("pastTenseMessage"))
        self.b.tool_call(as_str(part.get("toolId")) or "tool", args, ts=ts, output=done,
                         edits=[], meta={"ui_only": True})

    def _leftover(self, groups: list[FileEdit], turns: list[Turn], ts: datetime | None,
                  rid: str | None) -> None:
        if not groups:
            return
        self.counts["file_edits"] += len(groups)
        replies = [t for t in turns if t.role == "assistant" and not t.meta.get("thinking")]
        if replies:
            replies[-1].meta.setdefault("edits", []).extend(g.as_meta() for g in groups)
            return
        turn = self.b.tool_call("textEditGroup", {"files": [g.path for g in groups]}, ts=ts,
                                turn_id=f"{rid}:edits" if rid else None, edits=[], status="applied")
        turn.meta["edits"] = [g.as_meta() for g in groups]

