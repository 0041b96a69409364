"""A Cline SDK session (Cline 4.x, CLI 3.x): `<id>.messages.json` (messages contract v1:
`{version, updated_at, agent, sessionId, messages, system_prompt}`) with its `<id>.json`
manifest (cwd, title, provider, model, status, fork origin) beside it.

A sub-agent's transcript (`<agent id>.messages.json` in its parent's folder) is a conversation
of its own, `<session id>/<agent id>`. The system prompt is not kept.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import ParseReport, SourceError, UnrecognisedSource
from chinvex_adapters.kit.jsonfile import expect_object, read_json
from chinvex_adapters.kit.sessionfile import conversation
from chinvex_adapters.kit.text import as_str, one_line
from chinvex_adapters.kit.turns import ConversationBuilder

from .api import ApiReader
from .layout import SDK_MESSAGES
from .usertext import EnvFacts

LABEL = "Cline SDK session"
MANIFEST_KEYS = ("source", "status", "exit_code", "started_at", "ended_at", "provider", "interactive",
                 "team_name", "pid")
USAGE = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "cost")


def _manifest(path: Path, stem: str) -> dict[str, Any]:
    manifest = path.parent / f"{stem}.json"
    try:
        data = read_json(manifest, "Cline SDK session manifest") if manifest.is_file() else None
    except SourceError:
        return {}
    return data if isinstance(data, dict) else {}


def read_session(path: Path, report: ParseReport) -> ConversationDoc | None:
    data = expect_object(read_json(path, LABEL), path, LABEL, "messages")
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise UnrecognisedSource(f"{path}: not a {LABEL} ('messages' is not a list)")
    stem = path.name[: -len(SDK_MESSAGES)] if path.name.endswith(SDK_MESSAGES) else path.stem
    parent = path.parent.name
    sub_agent = stem != parent and (as_str(data.get("agent")) in ("subagent", "teammate")
                                    or (path.parent / f"{parent}{SDK_MESSAGES}").is_file())
    session_id = parent if sub_agent else as_str(data.get("sessionId")) or stem
    thread_id = f"{parent}/{stem}" if sub_agent else session_id
    manifest = {} if sub_agent else _manifest(path, stem)
    meta_block = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    cwd = as_str(manifest.get("cwd")) or as_str(manifest.get("workspace_root"))
    b = ConversationBuilder(report.counts, cwd=cwd)
    reader = ApiReader(b, EnvFacts())
    usage: Counter[str] = Counter()
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            report.counts["messages_malformed"] += 1
            continue
        ts = msg.get("ts") if isinstance(msg.get("ts"), int | float) else None
        tid = as_str(msg.get("id")) or f"m{i}"
        try:
            if msg["role"] == "assistant":
                info = msg.get("modelInfo") if isinstance(msg.get("modelInfo"), dict) else {}
                reader.assistant(msg, ts, as_str(info.get("id")), tid)
                _add_usage(usage, msg.get("metrics"))
            else:
                reader.user(msg, ts, tid)
        except (TypeError, ValueError, AttributeError, KeyError):
            report.counts["messages_malformed"] += 1  # a record of an unexpected shape: the rest goes on
    if "system_prompt" in data:
        report.counts["system_prompts_left_out"] += 1
    turns = b.finish(None)
    model = b.models.most_common(1)[0][0] if b.models else as_str(manifest.get("model"))
    metadata = _metadata(data, manifest, meta_block, usage, session_id, sub_agent)
    title = as_str(meta_block.get("title"))
    return conversation(agent="cline", source_uri=str(path), thread_id=thread_id, turns=turns,
                        title=one_line(title, 120) if title else None, cwd=cwd, model=model,
                        models=list(b.models), metadata=metadata)


def _add_usage(usage: Counter[str], metrics: Any) -> None:
    if isinstance(metrics, dict):
        for key in USAGE:
            value = metrics.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                usage[key] += value


def _metadata(data: dict[str, Any], manifest: dict[str, Any], meta_block: dict[str, Any],
              usage: Counter[str], session_id: str, sub_agent: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"tool": "cline", "store_format": "sdk_session", "session_id": session_id,
                            "messages_version": data.get("version"), "agent_role": data.get("agent")}
    for key in ("taskType", "origin", "updated_at"):
        if data.get(key) is not None:
            meta[key] = data[key]
    if sub_agent:
        meta["parent_session_id"] = session_id
    for key in MANIFEST_KEYS:
        if manifest.get(key) not in (None, ""):
            meta[f"session_{key}"] = manifest[key]
    if isinstance(manifest.get("model"), str):
        meta["configured_model"] = manifest["model"]
    if isinstance(manifest.get("workspace_root"), str):
        meta["workspace_root"] = manifest["workspace_root"]
    for key in ("mode", "fork", "totalCost"):
        if meta_block.get(key) not in (None, ""):
            meta[key] = meta_block[key]
    if usage:
        meta["usage"] = {k: round(v, 6) if k == "cost" else int(v) for k, v in usage.items()}
    return meta
