"""Rollout records → `ToolPiece`s: model calls and outputs, legacy completion events, items.

One function per channel (`response_item` payloads, legacy `event_msg` events, paginated
`item_completed` TurnItems); each returns None for a record that is not a tool piece.
"""

from __future__ import annotations

from typing import Any

from chinvex.models import Attachment
from chinvex_adapters.kit.edits import edits_from_call

from .content import (
    as_dict,
    as_int,
    as_list,
    as_str,
    command_text,
    content_parts,
    image_attachment,
    join_texts,
)
from .tools import (
    ToolPiece,
    compact_json,
    output_from_value,
    parse_arguments,
    render_input,
    small_input,
)


def _stdout_stderr(d: dict[str, Any]) -> str | None:
    for key in ("aggregated_output", "aggregatedOutput", "formatted_output"):
        text = as_str(d.get(key))
        if text:
            return text
    parts = [p for p in (as_str(d.get("stdout")), as_str(d.get("stderr"))) if p]
    return "\n".join(parts) if parts else None


def _mcp_result_text(result: Any, error: Any = None) -> str | None:
    res = as_dict(result)
    if "Err" in res:
        return f"Error: {as_str(res['Err']) or compact_json(res['Err'])}"
    ok = as_dict(res.get("Ok")) if "Ok" in res else res
    texts, _ = content_parts(ok.get("content"))
    text = join_texts(texts)
    if not text and ok.get("structuredContent") is not None:
        text = compact_json(small_input(ok["structuredContent"]))
    if not text and isinstance(result, str):
        text = result
    err = as_str(error) or as_str(as_dict(error).get("message"))
    if err:
        text = (text + "\n" if text else "") + f"Error: {err}"
    return text or None


def _changes(changes: Any) -> tuple[list[str], str | None]:
    """Paths and unified diffs of `patch_apply_end.changes` / `FileChange.changes`."""
    paths: list[str] = []
    diffs: list[str] = []
    if isinstance(changes, dict):
        items = [(k, v) for k, v in changes.items()]
    else:
        items = [(as_str(as_dict(c).get("path")), c) for c in as_list(changes)]
    for path, change in items:
        if not isinstance(path, str):
            continue
        paths.append(path)
        c = as_dict(change)
        diff = as_str(c.get("unified_diff")) or as_str(c.get("diff")) or as_str(c.get("content"))
        if diff:
            diffs.append(f"--- {path}\n{diff}")
    return paths, ("\n".join(diffs) or None)


def _agent_status_text(status: Any) -> str:
    if isinstance(status, str):
        return status
    d = as_dict(status)
    if len(d) == 1:
        (k, v), = d.items()
        return f"{k}: {v}" if isinstance(v, str) and v else str(k)
    return compact_json(small_input(status))


def _namespaced(name: str | None, namespace: Any) -> str | None:
    ns = as_str(namespace)
    if not ns or not name:
        return name
    if ns.endswith(("__", ".", "/", ":")):
        return ns + name
    return f"{ns}.{name}"


# -- record → piece --------------------------------------------------------------------------

def piece_from_response_item(kind: str, p: dict[str, Any]) -> ToolPiece | None:
    """Tool pieces from `response_item` payloads (the model-visible channel)."""
    call_id = as_str(p.get("call_id"))
    if kind == "function_call":
        name = _namespaced(as_str(p.get("name")), p.get("namespace")) or "function"
        args = parse_arguments(p.get("arguments"))
        return ToolPiece("call", call_id or as_str(p.get("id")), name, small_input(args),
                         render_input(name, args), status=as_str(p.get("status")),
                         edits=edits_from_call(name, args))
    if kind == "custom_tool_call":
        name = as_str(p.get("name")) or "custom_tool"
        raw = p.get("input")
        args = parse_arguments(raw) if name not in ("apply_patch",) else raw
        return ToolPiece("call", call_id or as_str(p.get("id")), name, small_input(args),
                         render_input(name, args), status=as_str(p.get("status")),
                         edits=edits_from_call(name, args))
    if kind == "local_shell_call":
        action = as_dict(p.get("action"))
        cmd = command_text(action.get("command"))
        where = as_str(action.get("working_directory"))
        text = (f"$ {cmd}" if cmd else None)
        if text and where:
            text += f"\n(in {where})"
        return ToolPiece("call", call_id or as_str(p.get("id")), "local_shell", small_input(action),
                         text, status=as_str(p.get("status")))
    if kind == "web_search_call":
        action = as_dict(p.get("action"))
        return ToolPiece("call", call_id or as_str(p.get("id")), "web_search", small_input(action),
                         _web_action_text(action, None), status=as_str(p.get("status")))
    if kind == "image_generation_call":
        prompt = as_str(p.get("revised_prompt"))
        atts = []
        result = p.get("result")
        if isinstance(result, str) and len(result) > 64:
            atts.append(Attachment(kind="image", name="generated image", mime_type="image/png",
                                   size_bytes=len(result) * 3 // 4))
        return ToolPiece("call", call_id or as_str(p.get("id")), "image_generation",
                         {"revised_prompt": small_input(prompt)} if prompt else None,
                         prompt, status=as_str(p.get("status")), attachments=atts)
    if kind == "tool_search_call":
        args = parse_arguments(p.get("arguments"))
        return ToolPiece("call", call_id or as_str(p.get("id")), "tool_search", small_input(args),
                         render_input("tool_search", args), status=as_str(p.get("status")))
    if kind == "tool_call":  # non-standard hand-made shape: {function:{name}, arguments}
        name = as_str(as_dict(p.get("function")).get("name")) or as_str(p.get("name")) or "tool"
        args = parse_arguments(p.get("arguments", as_dict(p.get("function")).get("arguments")))
        return ToolPiece("call", call_id or as_str(p.get("id")), name, small_input(args),
                         render_input(name, args))
    if kind in ("function_call_output", "custom_tool_call_output"):
        text, code, atts = output_from_value(p.get("output"))
        return ToolPiece("output", call_id, as_str(p.get("name")), output_text=text,
                         exit_code=code, attachments=atts)
    if kind == "tool_search_output":
        names = []
        for tool in as_list(p.get("tools")):
            tool = as_dict(tool)
            inner = [as_str(as_dict(t).get("name")) for t in as_list(tool.get("tools"))]
            label = as_str(tool.get("name")) or "?"
            names.append(label + (f" ({', '.join(n for n in inner if n)})" if any(inner) else ""))
        return ToolPiece("output", call_id, "tool_search",
                         output_text="Tools found: " + ", ".join(names) if names else None,
                         status=as_str(p.get("status")))
    if kind == "tool_result":  # non-standard hand-made shape
        result = p.get("result", p.get("output"))
        if isinstance(result, dict) and ("stdout" in result or "stderr" in result):
            text = _stdout_stderr(result)
            code = as_int(result.get("exitCode", result.get("exit_code")))
        else:
            text, code, _ = output_from_value(result)
        return ToolPiece("output", call_id or as_str(p.get("id")), as_str(p.get("name")),
                         output_text=text, exit_code=code)
    return None


def _web_action_text(action: dict[str, Any], query: Any) -> str | None:
    kind = as_str(action.get("type"))
    q = as_str(query) or as_str(action.get("query"))
    queries = [x for x in as_list(action.get("queries")) if isinstance(x, str)]
    if kind in (None, "search") and (q or queries):
        extra = [x for x in queries if x != q]
        return "search: " + (q or "") + ("".join(f"\nsearch: {x}" for x in extra))
    url = as_str(action.get("url"))
    if kind in ("open_page", "openPage") and url:
        return f"open: {url}"
    if kind in ("find_in_page", "findInPage"):
        return f"find {as_str(action.get('pattern')) or ''!r} in {url or ''}".strip()
    if q:
        return f"search: {q}"
    return compact_json(small_input(action)) if action else None


def piece_from_event(kind: str, p: dict[str, Any]) -> ToolPiece | None:
    """Tool pieces from legacy `event_msg` completion events."""
    call_id = as_str(p.get("call_id")) or as_str(p.get("callId"))
    if kind == "exec_command_end":
        cmd = command_text(p.get("command"))
        return ToolPiece("event", call_id, "exec_command", {"command": small_input(cmd)} if cmd else None,
                         f"$ {cmd}" if cmd else None, _stdout_stderr(p),
                         exit_code=as_int(p.get("exit_code")), status=as_str(p.get("status")))
    if kind == "mcp_tool_call_end":
        inv = as_dict(p.get("invocation"))
        server, tool = as_str(inv.get("server")), as_str(inv.get("tool"))
        name = f"{server}.{tool}" if server and tool else (tool or "mcp_tool")
        args = inv.get("arguments")
        return ToolPiece("event", call_id, name, small_input(args), render_input(name, args),
                         _mcp_result_text(p.get("result")))
    if kind == "patch_apply_end":
        paths, diffs = _changes(p.get("changes"))
        out = _stdout_stderr(p)
        if p.get("success") is False:
            out = "[patch failed] " + (out or "")
        return ToolPiece("event", call_id, "apply_patch", {"files": paths} if paths else None,
                         ("files: " + ", ".join(paths)) if paths else None, out, diffs,
                         status=as_str(p.get("status")))
    if kind == "web_search_end":
        action = as_dict(p.get("action"))
        results = []
        for r in as_list(p.get("results")):
            r = as_dict(r)
            title, url = as_str(r.get("title")), as_str(r.get("url"))
            if title or url:
                results.append(" — ".join(x for x in (title, url) if x))
        return ToolPiece("event", call_id, "web_search", small_input(action or None),
                         _web_action_text(action, p.get("query")),
                         "\n".join(results) or None)
    if kind == "image_generation_end":
        prompt = as_str(p.get("revised_prompt"))
        att = image_attachment(path=p.get("saved_path"), name="generated image")
        return ToolPiece("event", call_id, "image_generation", None, prompt,
                         status=as_str(p.get("status")), attachments=[att] if att else [])
    if kind == "view_image_tool_call":
        att = image_attachment(path=p.get("path"))
        return ToolPiece("event", call_id, "view_image", {"path": as_str(p.get("path"))},
                         as_str(p.get("path")), attachments=[att] if att else [])
    if kind == "dynamic_tool_call_request":
        name = _namespaced(as_str(p.get("tool")), p.get("namespace")) or "dynamic_tool"
        args = p.get("arguments")
        return ToolPiece("call", call_id, name, small_input(args), render_input(name, args))
    if kind == "dynamic_tool_call_response":
        name = _namespaced(as_str(p.get("tool")), p.get("namespace")) or "dynamic_tool"
        texts, atts = content_parts(p.get("content_items"))
        out = join_texts(texts) or None
        err = as_str(p.get("error")) or as_str(as_dict(p.get("error")).get("message"))
        if err:
            out = (out + "\n" if out else "") + f"Error: {err}"
        args = p.get("arguments")
        return ToolPiece("event", call_id, name, small_input(args), render_input(name, args),
                         out, attachments=atts)
    if kind == "collab_agent_spawn_end":
        child = as_str(p.get("new_thread_id"))
        who = " ".join(x for x in (as_str(p.get("new_agent_nickname")),
                                   f"({p['new_agent_role']})" if as_str(p.get("new_agent_role")) else None) if x)
        out = f"Spawned agent {who}".rstrip() + (f" as thread {child}" if child else "")
        if as_str(p.get("status")):
            out += f": {p['status']}"
        return ToolPiece("event", call_id, "spawn_agent", None, as_str(p.get("prompt")), out,
                         child_thread_ids=[child] if child else [])
    if kind in ("collab_waiting_end", "collab_close_end", "collab_agent_interaction_end"):
        return _collab_piece(kind, p, call_id)
    return None


def _collab_piece(kind: str, p: dict[str, Any], call_id: str | None) -> ToolPiece:
    """Waiting for, closing or messaging sub-agents: one line per agent and its status."""
    name = {"collab_waiting_end": "wait_agent", "collab_close_end": "close_agent",
            "collab_agent_interaction_end": "send_input"}[kind]
    lines = []
    for st in as_list(p.get("agent_statuses")):
        st = as_dict(st)
        label = as_str(st.get("agent_nickname")) or as_str(st.get("thread_id")) or "agent"
        lines.append(f"{label}: {_agent_status_text(st.get('status'))}" if st.get("status") is not None
                     else label)
    receiver = as_str(p.get("receiver_agent_nickname")) or as_str(p.get("receiver_thread_id"))
    if receiver and p.get("status") is not None:
        lines.append(f"{receiver}: {_agent_status_text(p.get('status'))}")
    return ToolPiece("event", call_id, name, None, as_str(p.get("prompt")),
                     "\n".join(lines) or None)


def piece_from_item(kind: str, it: dict[str, Any]) -> ToolPiece | None:
    """Tool pieces from paginated `item_completed` TurnItems (PascalCase-tagged)."""
    key = as_str(it.get("id"))
    if kind == "CommandExecution":
        cmd = command_text(it.get("command"))
        code = as_int(it.get("exit_code", it.get("exitCode")))
        return ToolPiece("event", key, "exec_command", {"command": small_input(cmd)} if cmd else None,
                         f"$ {cmd}" if cmd else None, _stdout_stderr(it), exit_code=code,
                         status=as_str(it.get("status")))
    if kind == "McpToolCall":
        server, tool = as_str(it.get("server")), as_str(it.get("tool"))
        name = f"{server}.{tool}" if server and tool else (tool or "mcp_tool")
        args = it.get("arguments")
        return ToolPiece("event", key, name, small_input(args), render_input(name, args),
                         _mcp_result_text(it.get("result"), it.get("error")),
                         status=as_str(it.get("status")))
    if kind == "FileChange":
        paths, diffs = _changes(it.get("changes"))
        return ToolPiece("event", key, "apply_patch", {"files": paths} if paths else None,
                         ("files: " + ", ".join(paths)) if paths else None, _stdout_stderr(it), diffs,
                         status=as_str(it.get("status")))
    if kind == "WebSearch":
        action = as_dict(it.get("action"))
        return ToolPiece("event", key, "web_search", small_input(action or None),
                         _web_action_text(action, it.get("query")))
    if kind == "ImageGeneration":
        prompt = as_str(it.get("revised_prompt"))
        att = image_attachment(path=it.get("saved_path") or it.get("path"), name="generated image")
        return ToolPiece("event", key, "image_generation", None, prompt,
                         status=as_str(it.get("status")), attachments=[att] if att else [])
    if kind == "ImageView":
        att = image_attachment(path=it.get("path"))
        return ToolPiece("event", key, "view_image", {"path": as_str(it.get("path"))},
                         as_str(it.get("path")), attachments=[att] if att else [])
    if kind == "DynamicToolCall":
        name = _namespaced(as_str(it.get("tool")), it.get("namespace")) or "dynamic_tool"
        texts, atts = content_parts(it.get("content_items", it.get("contentItems")))
        args = it.get("arguments")
        return ToolPiece("event", key, name, small_input(args), render_input(name, args),
                         join_texts(texts) or None, status=as_str(it.get("status")), attachments=atts)
    if kind == "CollabAgentToolCall":
        name = as_str(it.get("tool")) or "collab_agent"
        children = [t for t in as_list(it.get("receiver_thread_ids", it.get("receiverThreadIds")))
                    if isinstance(t, str)]
        return ToolPiece("event", key, name, None, as_str(it.get("prompt")),
                         as_str(it.get("status")), child_thread_ids=children)
    if kind == "Extension":
        ext = as_str(it.get("kind"))
        action = as_dict(it.get("action"))
        text = _web_action_text(action, it.get("query")) if (action or it.get("query")) else None
        return ToolPiece("event", key, f"extension:{ext}" if ext else "extension",
                         small_input({"query": it.get("query"), "action": action or None}), text)
    return None
