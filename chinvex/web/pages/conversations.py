"""The conversation viewer: a Codex, Claude Code or ChatGPT thread turn by turn, with roles and
times, tool calls and their outputs folded away (`<details>`), patches shown as diffs, and a
page of turns at a time so a 5,000-turn session opens at once.

The turns are those `chinvex get THREAD_ID` prints (`chinvex.storage.threads`); a search hit or a
citation links here with `?turn=N#turn-N` (turns numbered from 1, as chunk texts and metadata
number them), and the page holding that turn is the one served, with the turn unfolded.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from chinvex.errors import NotFoundError, UsageError
from chinvex.web.highlight import Highlighter
from chinvex.web.pages.common import int_param, reading, selected_config, text_param
from chinvex.web.render import render, segment, url

PAGE_TURNS = 100
_PATCH_START = re.compile(r"^(\*\*\* Begin Patch|diff --git |--- (a/|/dev/null|\S))")


def diff_lines(text: str) -> list[tuple[str, str]] | None:
    """`text` as (css class, line) pairs when it holds a patch (Codex's `*** Begin Patch` form
    or a unified diff), else None. Lines outside the patch are plain context."""
    lines = text.split("\n")
    if not any(_PATCH_START.match(line) for line in lines):
        return None
    out: list[tuple[str, str]] = []
    inside = False
    for line in lines:
        if _PATCH_START.match(line):
            inside = True
        if not inside:
            out.append(("", line))
            continue
        if line.startswith(("*** End Patch", "Output:")):
            inside = False
            out.append(("file" if line.startswith("***") else "", line))
        elif line.startswith(("+++", "---", "***", "diff --git")):
            out.append(("file", line))
        elif line.startswith("@@"):
            out.append(("hunk", line))
        elif line.startswith("+"):
            out.append(("add", line))
        elif line.startswith("-"):
            out.append(("del", line))
        else:
            out.append(("", line))
    return out


def edit_diff(tool: Any) -> list[tuple[str, str]] | None:
    """A Claude Code `Edit` call (old_string -> new_string) as a diff."""
    if not isinstance(tool, dict) or not isinstance(tool.get("input"), dict):
        return None
    args = tool["input"]
    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    head = [("file", f"*** {args.get('file_path', '')}")] if args.get("file_path") else []
    return head + [("del", "-" + line) for line in old.split("\n")] + [("add", "+" + line) for line in new.split("\n")]


def turn_view(turn: dict[str, Any], target: int | None) -> dict[str, Any]:
    """One turn of `conversations.conversation` as the template shows it: numbered from 1 (as
    chunk metadata and `[Turn N of M]` markers number turns), tools folded with a one-line
    summary, and a diff when there is a patch."""
    number = turn["index"] + 1
    tool = turn.get("tool")
    is_tool = bool(tool) or turn.get("role") == "tool"
    name = tool.get("name") if isinstance(tool, dict) else None
    text = turn.get("text") or ""
    summary = next((line.strip() for line in text.split("\n")
                    if line.strip() and not line.startswith(("Tool:", "Tool call:", "*** Begin Patch"))), "")
    edited = edit_diff(tool)
    return {
        "number": number, "role": turn.get("role") or "?", "ts": turn.get("ts"), "text": text,
        "truncated": bool(turn.get("text_truncated")), "is_tool": is_tool, "tool_name": name,
        "summary": summary[:160], "target": number == target,
        # An edit's diff comes from its input: the text (its result) is shown under it. A patch
        # found in the text is the text, shown as a diff.
        "diff": edited or (diff_lines(text) if is_tool else None), "text_too": edited is not None,
    }


def conversation_page(request: Request) -> Response:
    """GET /conversation/{thread_id}: a thread id or unique prefix, as `chinvex get` takes it."""
    from chinvex.storage.threads import AmbiguousIdError, conversation, find_thread

    config = selected_config(request)
    thread = request.path_params["thread_id"]
    query = text_param(request, "q")
    target = int_param(request, "turn", 0, low=0, high=10_000_000) or None
    if request.query_params.get("jump") and target:
        # The "jump to turn" form: land on the turn itself (a form cannot add a #fragment).
        return RedirectResponse(url(f"/conversation/{segment(thread)}", context=config.name, turn=target, q=query)
                                + f"#turn-{target}", status_code=303)
    with reading(config) as conn:
        try:
            row = find_thread(conn, thread) if conn is not None else None
        except AmbiguousIdError as exc:
            raise UsageError(str(exc)) from None
        if row is None:
            raise NotFoundError(f"No conversation {thread!r} in context {config.name}.")
        found = conversation(conn, row, config.name)
    turns = found["turns"]
    pages = max(1, -(-len(turns) // PAGE_TURNS))
    if target is not None:
        page = min(pages, (min(target, len(turns) or 1) - 1) // PAGE_TURNS + 1)
    else:
        page = int_param(request, "page", 1, low=1, high=pages)
    shown = turns[(page - 1) * PAGE_TURNS: page * PAGE_TURNS]
    from chinvex.retrieval.lexical import query_terms

    from chinvex.web.markdown import render_message

    with Highlighter(query_terms(query) if query else []) as highlight:
        return render(request, "conversation.html", page="documents", context=config.name, conv=found,
                      turns=[turn_view(t, target) for t in shown], current_page=page, pages=pages,
                      page_turns=PAGE_TURNS, target=target, query=query, highlight=highlight, thread=thread,
                      markdown=lambda text: render_message(text, highlight))


def routes() -> list[Route]:
    return [Route("/conversation/{thread_id}", conversation_page)]
