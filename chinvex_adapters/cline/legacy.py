"""A legacy task folder (Cline <= 3.x, Roo Code, Kilo Code 4.x) as one conversation.

The API history gives the words and tool calls, the UI records the times Cline's API history
lacks, the reasoning XML-era Roo kept only there, usage, and the stretch a destructive condense
cut from the API history (between the first message and the summary). Without an API history
the UI records alone make the conversation.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import ParseReport, SourceError, UnrecognisedSource
from chinvex_adapters.kit.jsonfile import read_json
from chinvex_adapters.kit.sessionfile import conversation
from chinvex_adapters.kit.text import one_line
from chinvex_adapters.kit.turns import ConversationBuilder

from .api import ApiReader
from .history import HistoryIndex, task_facts
from .layout import (API_HISTORY, EXTENSION_IDS, OLD_UI_MESSAGES, TASK_TRANSCRIPTS, UI_MESSAGES,
                     is_cline_task_id, tool_of_path, tool_of_task_id)
from .ui import UiFacts, UiReader, between, read_ui, request_times
from .usertext import EnvFacts, strip_environment

LABEL = "Cline, Roo Code or Kilo Code task"


@dataclass
class TaskFiles:
    task_id: str
    folder: Path
    api: Path | None
    ui: Path | None


def task_files(primary: Path, shape: str | None) -> TaskFiles:
    """The task a file belongs to: its folder's transcripts when it has a task file's name,
    else the file alone (its shape, "api" or "ui", says which it is)."""
    folder = primary.parent
    if primary.name in TASK_TRANSCRIPTS:
        api = folder / API_HISTORY
        ui = next((folder / n for n in (UI_MESSAGES, OLD_UI_MESSAGES) if (folder / n).is_file()), None)
        return TaskFiles(folder.name, folder, api if api.is_file() else None, ui)
    stem = primary.name[:-5] if primary.name.endswith(".json") else primary.stem
    return TaskFiles(stem, folder, primary if shape == "api" else None, primary if shape == "ui" else None)


def _load(path: Path) -> tuple[list[Any] | None, str | None]:
    """The file's array, or None with why it is not one (unreadable is a SourceError)."""
    try:
        data = read_json(path, LABEL)
    except UnrecognisedSource as exc:
        if path.is_file():
            try:  # rewritten while we read it: one more try
                data = read_json(path, LABEL)
            except UnrecognisedSource:
                return None, str(exc)
        else:
            return None, str(exc)
    except SourceError:
        if not path.exists():
            return None, f"{path}: disappeared before it could be read"
        raise
    if not isinstance(data, list):
        return None, f"{path}: not a {LABEL} (a JSON {type(data).__name__}, not an array)"
    return data, None


def read_task(primary: Path, report: ParseReport, *, shape: str | None,
              index: HistoryIndex) -> ConversationDoc | None:
    files = task_files(primary, shape)
    api, api_error = _load(files.api) if files.api else (None, None)
    ui_raw, ui_error = _load(files.ui) if files.ui else (None, None)
    if api is None and ui_raw is None:
        raise UnrecognisedSource(api_error or ui_error or f"{primary}: not a {LABEL} (no transcript)")
    if api_error:
        report.warnings.append(f"API history unreadable, read from the UI messages: {api_error}")
        report.counts["api_history_unreadable"] += 1
    if ui_error and ui_raw is None and files.ui is not None:
        report.counts["ui_messages_unreadable"] += 1
    ui = read_ui(ui_raw, report.counts) if ui_raw else None
    facts = task_facts(files.folder, files.task_id, index, report.counts)
    env = EnvFacts()
    cwd = facts.get("cwd") or _first_cwd(api or [])
    b = ConversationBuilder(report.counts, cwd=cwd)
    reader = ApiReader(b, env)
    if api:
        _api_turns(api, ui, reader, report.counts)
    elif ui is not None:
        # No API history, so no second copy of the user's words to drop: the same words twice
        # in a row are two prompts (a real task: "yo", an API failure and a resume, "yo" again).
        UiReader(b, first_is_task=True).add(ui.records)
    tool = tool_of_path(primary) or tool_of_task_id(files.task_id) or _tool_by_content(env, ui)
    turns = b.finish(_fallback_time(files.task_id, primary))
    model = b.models.most_common(1)[0][0] if b.models else None
    metadata = _metadata(files, api, ui, env, facts, tool, primary)
    title = one_line(facts["title"], 120) if facts.get("title") else None
    if not title and ui is not None and ui.first_text:
        title = one_line(ui.first_text, 120)
    return conversation(agent=tool, source_uri=str(primary), thread_id=files.task_id, turns=turns,
                        title=title, cwd=cwd or (env.cwds[0] if env.cwds else None), model=model,
                        models=list(b.models), metadata=metadata)


def _first_cwd(api: list[Any]) -> str | None:
    """The working directory from the first user messages' environment details (before the
    turns are built, so that edits' relative paths resolve)."""
    probe = EnvFacts()
    for msg in api[:6]:
        content = msg.get("content") if isinstance(msg, dict) else None
        for block in content if isinstance(content, list) else [{"text": content}]:
            text = block.get("text") if isinstance(block, dict) else None
            if isinstance(text, str) and "<environment_details>" in text:
                strip_environment(text, probe)
                if probe.cwds:
                    return probe.cwds[0]
    return None


def _api_turns(api: list[Any], ui: UiFacts | None, reader: ApiReader, counts: Counter[str]) -> None:
    """The API messages in order, with the UI's times, reasoning, and condensed-away stretch."""
    b = reader.b
    sent, replies = request_times(ui) if ui is not None else ([], [])
    has_thinking = any(_has_thinking(m) for m in api)
    reasoning = [r for r in ui.records if r.get("say") == "reasoning"] if ui and not has_thinking else []
    pending, users, last_ts = 0, 0, None
    for i, msg in enumerate(api):
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            counts["messages_malformed"] += 1
            continue
        ts = msg.get("ts") if isinstance(msg.get("ts"), int | float) else None
        if msg["role"] == "user":
            if ts is None and users < len(sent):
                ts = sent[users]
            users += 1
        elif ts is None and 0 < users <= len(replies):
            ts = replies[users - 1]
        if msg.get("isSummary") and ui is not None and last_ts is not None and ts is not None:
            window = [r for r in between(ui, last_ts, ts) if r.get("say") != "condense_context"]
            UiReader(b, first_is_task=False, say=reader.say).add(window)
            counts["condensed_records_from_ui"] += len(window)
            while pending < len(reasoning) and reasoning[pending]["ts"] < ts:
                pending += 1
        if msg["role"] == "assistant":
            while pending < len(reasoning) and ts is not None and reasoning[pending]["ts"] <= ts:
                b.thinking(reasoning[pending]["text"], ts=reasoning[pending]["ts"],
                           turn_id=f"ui{reasoning[pending]['ts']}")
                pending += 1
        try:
            if msg["role"] == "assistant":
                reader.assistant(msg, ts, _model_of(msg) or reader.env.model, f"m{i}")
            else:
                reader.user(msg, ts, f"m{i}")
        except (TypeError, ValueError, AttributeError, KeyError):
            counts["messages_malformed"] += 1  # a record of an unexpected shape: the rest goes on
        last_ts = ts if ts is not None else last_ts
    if ui is not None and last_ts is not None:
        tail = [r for r in between(ui, last_ts, None)
                if r.get("say") == "user_feedback" or (r.get("say") == "reasoning" and not has_thinking)]
        UiReader(b, first_is_task=False, say=reader.say).add(tail)


def _has_thinking(msg: Any) -> bool:
    if not isinstance(msg, dict):
        return False
    if msg.get("type") == "reasoning":
        return True
    content = msg.get("content")
    kinds = ("thinking", "reasoning", "redacted_thinking")
    return isinstance(content, list) and any(isinstance(c, dict) and c.get("type") in kinds for c in content)


def _model_of(msg: dict[str, Any]) -> str | None:
    info = msg.get("modelInfo")
    if isinstance(info, dict):
        for key in ("modelId", "id"):
            if isinstance(info.get(key), str) and info[key]:
                return info[key]
    return None


def _tool_by_content(env: EnvFacts, ui: UiFacts | None) -> str:
    """Cline writes `ACT MODE` / `PLAN MODE` where Roo and Kilo write a mode slug; Kilo and
    Roo cannot be told apart by content (their folder tells)."""
    if any(m in ("act", "plan") for m in env.modes) or (ui is not None and ui.models):
        return "cline"
    if env.modes:
        return "roo"
    return "cline"


def _fallback_time(task_id: str, primary: Path) -> datetime | None:
    """A Cline task id is its creation time; otherwise the file's time."""
    if is_cline_task_id(task_id):
        return datetime.fromtimestamp(int(task_id) / 1000, timezone.utc)
    try:
        return datetime.fromtimestamp(primary.stat().st_mtime, timezone.utc)
    except OSError:
        return None


def _metadata(files: TaskFiles, api: list[Any] | None, ui: UiFacts | None, env: EnvFacts,
              facts: dict[str, Any], tool: str, primary: Path) -> dict[str, Any]:
    meta: dict[str, Any] = {"task_id": files.task_id, "tool": tool, "store_format": "task_folder",
                            "transcripts": [p.name for p in (files.api, files.ui) if p is not None]}
    storage = next((p.lower() for p in reversed(primary.parts) if p.lower() in EXTENSION_IDS), None)
    if storage:
        meta["extension_id"] = storage
    if api is not None:
        meta["api_messages"] = len(api)
        summaries = sum(1 for m in api if isinstance(m, dict) and m.get("isSummary"))
        if summaries:
            meta["condense_summaries"] = summaries
    if ui is not None:
        meta["ui_records"] = len(ui.records)
        if ui.usage:
            meta["usage"] = ui.usage
        if ui.condensed:
            meta["condensed"] = ui.condensed
    if env.modes:
        meta["modes"] = env.modes
    if len(env.cwds) > 1:
        meta["cwds"] = env.cwds[:10]
    meta.update({k: v for k, v in facts.items() if k not in ("cwd", "title")})
    return meta
