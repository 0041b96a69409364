"""The rollout parse's running context: what a group's resolution needs from before the group.

`ctx` is a JSON-able dict (the stored resume state is its value at the start of the last
group), plus the summaries of the lines that only feed it: the first `session_meta`, token
usage records.
"""

from __future__ import annotations

from typing import Any

import orjson

from chinvex.jsonio import dumps

from .content import as_dict, as_int, as_str, json_scalar


def new_context() -> dict[str, Any]:
    return {
        "v": 1,
        "thread_id": None,
        "meta": {},
        "other_session_ids": [],
        "child_thread_ids": [],
        "models": [],
        "repo_paths": [],
        "workspace_id": None,
        "thread_name": None,
        "first_user_text": None,
        "created_at": None,
        "updated_at": None,
        "next_turn": 0,
        "last_turn_id": None,
        "pending_calls": {},
        "era": None,
        "lines_seen": 0,
        "model": None,
        "codex_turn_id": None,
        "event_users_seen": False,
        "token_usage": None,
        "rollout_reference": None,
        "n_session_meta": 0,
        "n_conversation_lines": 0,
        "n_setup_lines": 0,
        "n_unrecognised_lines": 0,
        "unknown_types": [],
    }


def copy_context(ctx: dict[str, Any]) -> dict[str, Any]:
    """A deep copy that is also what the stored resume state will hold: JSON, and writable by
    orjson (`dumps` turns what orjson refuses, e.g. a >64-bit integer from a line only the
    stdlib parser read, into a string)."""
    return orjson.loads(dumps(ctx))


def add_unique(items: list[Any], value: Any, limit: int = 200) -> None:
    if value is not None and value != "" and value not in items and len(items) < limit:
        items.append(value)



def token_summary(usage: dict[str, Any]) -> dict[str, int]:
    out = {}
    for key in ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens",
                "total_tokens"):
        value = as_int(usage.get(key))
        if value is not None:
            out[key] = value
    return out


def source_kind(source: Any) -> str | None:
    """`cli`, `vscode`, `exec`, ... or `subagent:<kind>` for sub-agent threads."""
    if isinstance(source, str):
        return source
    d = as_dict(source)
    if not d:
        return None
    (key, value), = list(d.items())[:1]
    if key in ("subagent", "subAgent", "sub_agent"):
        if isinstance(value, str):
            return f"subagent:{value}"
        inner = as_dict(value)
        if not inner:
            return "subagent"
        (kind, detail), = list(inner.items())[:1]
        if kind == "other" and isinstance(detail, str) and detail:
            return f"subagent:other:{detail}"  # {"other": "guardian"}: the approval reviewer
        return f"subagent:{kind}"
    return str(key)


def meta_summary(p: dict[str, Any]) -> dict[str, Any]:
    """The small, stable facts of the file's own session_meta (never base_instructions)."""
    out: dict[str, Any] = {}
    for key in ("session_id", "cli_version", "originator", "model_provider", "history_mode",
                "memory_mode", "forked_from_id", "parent_thread_id", "agent_nickname", "agent_role",
                "agent_path", "thread_source"):
        value = json_scalar(p.get(key))
        if value is not None and value != "":
            out[key] = value
    kind = source_kind(p.get("source"))
    if kind:
        out["source_kind"] = kind
    spawn = as_dict(as_dict(as_dict(p.get("source")).get("subagent")).get("thread_spawn"))
    if as_str(spawn.get("parent_thread_id")) and "parent_thread_id" not in out:
        out["parent_thread_id"] = spawn["parent_thread_id"]
    base = as_dict(p.get("history_base"))
    if as_str(base.get("thread_id")):
        out["history_base_thread_id"] = base["thread_id"]
    git = as_dict(p.get("git"))
    git_out = {k: git[k] for k in ("repository_url", "branch", "commit_hash") if as_str(git.get(k))}
    if git_out:
        out["git"] = git_out
    return out
