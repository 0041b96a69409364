"""`chinvex mcp`: the stdio MCP server (official `mcp` SDK, `MCPServer`).

This module only describes the tools (names, argument schemas with descriptions, annotations)
and turns the plain functions of `tools.py` into tool results: JSON as structured content plus
the same JSON as text. Every failure, including arguments that do not match the schema and
unknown tool names, becomes an `isError` result carrying `{"ok": false, "error": {"code",
"message"}}`; the server itself never goes down for an agent's mistake.

Start-up imports only the SDK and this package's light modules: `initialize` and `tools/list`
are answered before any embedder, numpy or Chroma is loaded (they load on the first tool call
that needs them, and stay warm).
"""

# No `from __future__ import annotations` here: the SDK would have to eval every tool
# annotation back from a string at start-up, which the handshake pays for.

import sys
from typing import Annotated, Any, Literal

import orjson
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from chinvex import __version__
from chinvex.mcp import budget
from chinvex.mcp import limits
from chinvex.mcp import tools
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.state import ServerState

SERVER_NAME = "chinvex"

INSTRUCTIONS = (
    "chinvex searches the user's indexed knowledge: code repositories, notes, chat exports and "
    "agent sessions, grouped into contexts (one per project). Use chinvex_search or recall_search "
    "before re-deriving something that may already be known; cite chunk ids. recall_add stores a "
    "decision, pattern or lesson so later sessions find it. Without a context argument, tools use "
    "the project context (the server's --context, CHINVEX_CONTEXT, or the context containing the "
    "working directory); a context named 'global' holds cross-project knowledge."
)

_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
"""Read-only: the destructive and idempotent hints are meaningful only when readOnlyHint is false
(MCP spec), so they are left out of the list the model reads."""
_WRITE = ToolAnnotations(read_only_hint=False, idempotent_hint=False, destructive_hint=False, open_world_hint=False)

Query = Annotated[str, Field(description=f"Question or keywords (max {limits.QUERY_MAX_BYTES // 1024} KB).")]
ContextName = Annotated[str | None, Field(
    description="Context name or alias (see chinvex_list_contexts). Omit for the project context.")]
CoreContext = Annotated[str, Field(description="Omit for the project's.")]
CoreTypes = Annotated[list[str], Field(description="Only: repo, codex_session, agent_session, chat, note, memory.")]
MaxTokens = Annotated[int, Field(ge=100, le=budget.MAX_TOKENS_LIMIT, description="Cap on returned text; says if cut.")]
SourceTypes = Annotated[list[str] | None, Field(
    description="Only these source types: repo, codex_session, agent_session, chat, note, memory. Omit for all.")]


def _dump(payload: Any) -> str:
    return orjson.dumps(payload, default=str).decode()


def result(payload: dict[str, Any], *, error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=_dump(payload))],
                          structured_content=payload, is_error=error)


def failure(code: str, message: str, **details: Any) -> CallToolResult:
    return result(ToolFailure(code, message, **details).payload(), error=True)


def _validation_message(exc: ValidationError) -> str:
    """Field and problem only: the rejected values are the caller's data (and may be huge)."""
    parts = []
    for err in exc.errors()[:8]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    more = f" (+{exc.error_count() - 8} more)" if exc.error_count() > 8 else ""
    return "; ".join(parts) + more


class ChinvexMCPServer(MCPServer):
    """MCPServer whose argument and lookup failures carry chinvex's error codes, and whose stdio
    transport answers every line (`chinvex.mcp.transport`)."""

    async def run_stdio_async(self) -> None:
        """The SDK's `run_stdio_async` with chinvex's transport in place of the SDK's
        `stdio_server`, which leaves lines it cannot validate unanswered."""
        from chinvex.mcp.transport import stdio_transport

        lowlevel = self._lowlevel_server
        async with stdio_transport() as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    async def list_tools(self) -> Any:
        """The SDK's list without the `title` it derives from every argument's name, nor empty
        defaults ("", [] or false) of optional arguments: the list is read by the agent's model every
        session, and the names (and "omit for ..." in the descriptions) say it already."""
        tools = await super().list_tools()
        for tool in tools:
            tool.input_schema = _lean(tool.input_schema)
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        known = [t.name for t in await self.list_tools()]  # public API, not the tool manager
        if name not in known:
            names = ", ".join(known)
            return failure(limits.UNKNOWN_TOOL, f"Unknown tool {name[:100]!r}; available tools: {names}.")
        if not isinstance(arguments, dict):
            return failure(limits.INVALID_ARGUMENT, "arguments must be a JSON object.")
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            cause = exc.__cause__
            sys.stderr.write(f"chinvex mcp: tool {name} crashed: {type(cause).__name__}: {cause}\n")
            return failure(limits.INTERNAL_ERROR, f"internal error in {name} ({type(cause).__name__}); please report it")
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return failure(limits.INVALID_ARGUMENT, f"{name}: {_validation_message(exc.__cause__)}")
            return failure(limits.INVALID_ARGUMENT, str(exc))


def _empty(value: Any) -> bool:
    return value is False or (isinstance(value, (str, list)) and not value)


def _lean(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _lean(v) for k, v in schema.items()
                if not (k == "title" and isinstance(v, str)) and not (k == "default" and _empty(v))}
    if isinstance(schema, list):
        return [_lean(v) for v in schema]
    return schema


def _run(fn: Any, state: ServerState, **kwargs: Any) -> CallToolResult:
    ok, payload = tools.run_tool(fn, state, **kwargs)
    return result(payload, error=not ok)


def build_server(state: ServerState) -> ChinvexMCPServer:
    """The server with every tool registered, in the order tools/list gives them, then those
    the session's profile (CHINVEX_MCP_TOOLS) does not select removed."""
    server = ChinvexMCPServer(name=SERVER_NAME, version=__version__, instructions=INSTRUCTIONS,
                              log_level="WARNING")
    _add_chinvex_tools(server, state)
    _add_recall_lookup_tools(server, state)
    _add_recall_write_tools(server, state)
    _add_flight_recorder_tool(server, state)
    _keep_profile_tools(server, state)
    return server


def _add_chinvex_tools(server: ChinvexMCPServer, state: ServerState) -> None:
    """Search, answer, pack and read the indexed contexts, and blame a file's lines."""

    @server.tool(name="chinvex_answer", annotations=ToolAnnotations(read_only_hint=True),
                 description="Answer from the user's indexed code, notes and sessions: 1-3 sentences, "
                 "each citing [chunk:<id>], with where it is and the words it rests on; refuses "
                 "(grounded=false) when the sources do not say it. For background use chinvex_pack; to "
                 "browse, chinvex_search.")
    def chinvex_answer(
        query: Annotated[str, Field(description="The question.")],
        context: CoreContext = "",
        k: Annotated[int, Field(ge=limits.K_MIN, le=limits.K_MAX, description="Chunks to retrieve.")] = 8,
        grounded: Annotated[bool, Field(description="Refuse unless sources support it.")] = True,
        source_types: CoreTypes = [],  # noqa: B006 (pydantic copies defaults)
        include_evidence: Annotated[bool, Field(description="Add the retrieved chunks.")] = False,
        max_tokens: MaxTokens = budget.DEFAULT_MAX_TOKENS,
    ) -> CallToolResult:
        return _run(tools.chinvex_answer, state, query=query, context=context, k=k, grounded=grounded,
                    source_types=source_types, include_evidence=include_evidence, max_tokens=max_tokens)

    @server.tool(name="chinvex_search", annotations=_READ,
                 description="Ranked chunks (full-text + vector): chunk_id, place, text, scores, "
                 "staleness. To browse or find exact spots; chinvex_answer answers, chinvex_get_chunks "
                 "reads around a hit.")
    def chinvex_search(
        query: Query,
        context: CoreContext = "",
        contexts: Annotated[list[str], Field(description="Several contexts at once.")] = [],  # noqa: B006
        k: Annotated[int, Field(ge=limits.K_MIN, le=limits.K_MAX, description="Results.")] = 8,
        source_types: CoreTypes = [],  # noqa: B006
        max_tokens: MaxTokens = budget.DEFAULT_MAX_TOKENS,
        filter: Annotated[str, Field(description="Predicate, e.g. doc.path GLOB 'src/**' AND "
                                     "doc.mtime >= '2026-03-01'.")] = "",
        per_doc: Annotated[int, Field(ge=0, le=limits.K_MAX, description="Max chunks per file; 1 lists files.")] = 0,
    ) -> CallToolResult:
        return _run(tools.chinvex_search, state, query=query, context=context, contexts=contexts, k=k,
                    source_types=source_types, max_tokens=max_tokens, filter=filter, per_doc=per_doc)

    @server.tool(name="chinvex_pack", annotations=_READ,
                 description="Background for a task: the best chunks in a hard token budget, deterministic, "
                 "each with path, lines, sha256 and mtime. Use before starting work.")
    def chinvex_pack(
        task: Annotated[str, Field(description="The task or question.")],
        context: CoreContext = "",
        budget_tokens: Annotated[int, Field(ge=1, le=200_000, description="Hard size limit.")] = 2000,
        diversity: Annotated[int, Field(ge=0, le=limits.K_MAX, description="Max chunks per document; 0: no limit.")] = 0,
        source_types: CoreTypes = [],  # noqa: B006
    ) -> CallToolResult:
        return _run(tools.chinvex_pack, state, task=task, context=context, budget_tokens=budget_tokens,
                    diversity=diversity or None, source_types=source_types)

    @server.tool(name="chinvex_get_chunks", annotations=_READ,
                 description="Read chunks by id: text, ranges, metadata, previous and next chunk ids.")
    def chinvex_get_chunks(
        chunk_ids: Annotated[list[str], Field(description=f"Chunk ids (max {limits.CHUNK_IDS_MAX}).")],
        context: CoreContext = "",
    ) -> CallToolResult:
        return _run(tools.chinvex_get_chunks, state, chunk_ids=chunk_ids, context=context)

    @server.tool(name="chinvex_blame", annotations=_READ,
                 description="Which agent session wrote these lines, and why: each line's commit and "
                 "the sessions whose edits added it, with chunk ids to cite.")
    def chinvex_blame(
        path: Annotated[str, Field(description="Absolute, or relative to the project.")],
        lines: Annotated[str, Field(description="N or N-M; omit for all (max 400).")] = "",
        context: CoreContext = "",
    ) -> CallToolResult:
        return _run(tools.chinvex_blame, state, path=path, lines=lines, context=context)

    @server.tool(name="chinvex_list_contexts", annotations=_READ,
                 description="List the contexts (name, aliases, number of sources of each kind), which "
                 "one is the project context for this session and how it was chosen.")
    def chinvex_list_contexts() -> CallToolResult:
        return _run(tools.chinvex_list_contexts, state)


def _add_recall_lookup_tools(server: ChinvexMCPServer, state: ServerState) -> None:
    """RECALL's read tools: search, get, list, and what is known about one file."""

    @server.tool(name="recall_search", annotations=ToolAnnotations(
                     read_only_hint=True, idempotent_hint=False, destructive_hint=False, open_world_hint=False),
                 description="Search organizational knowledge including code, documentation, architecture "
                 "decisions, and session history. Returns ranked results (id, type, title, content, score, "
                 "metadata). Every call is logged to the flight recorder as a retrieval_query.")
    def recall_search(
        query: Annotated[str, Field(description="Natural language search query.")],
        types: Annotated[list[str] | None, Field(
            description="Filter by content types: code, doc (documentation), session, decision (adr), "
            "pattern, failure, context, runbook (playbook), or a type given to recall_add. Omit for all.")] = None,
        scope: Annotated[Literal["project", "global", "all"], Field(
            description="'project' = the current project's context, 'global' = the context named "
            "'global' (cross-project knowledge), 'all' = both.")] = "all",
        limit: Annotated[int, Field(ge=limits.LIMIT_MIN, le=limits.LIMIT_MAX,
                                    description="Maximum number of results to return.")] = 10,
        max_tokens: MaxTokens = budget.DEFAULT_MAX_TOKENS,
        filter: Annotated[str | None, Field(description="Exact predicate (filter expression language), "
                                            "e.g. doc.source_type = 'note'.")] = None,
        rerank: Annotated[bool, Field(description="Apply the reranking stage when the context configures "
                                      "one (query_metadata.reranked says whether it ran).")] = True,
    ) -> CallToolResult:
        return _run(tools.recall_search, state, query=query, types=types, scope=scope, limit=limit,
                    max_tokens=max_tokens, filter=filter, rerank=rerank)

    @server.tool(name="recall_get", annotations=_READ,
                 description="Retrieve the full content of a knowledge item or chunk by its id (from "
                 "recall_search results). Use after recall_search to get complete context.")
    def recall_get(
        id: Annotated[str, Field(description="Item id from search results (e.g. D-1a2b3c4d or a chunk id).")],
        include_parent: Annotated[bool, Field(
            description="For a chunk, also return its whole document's text as parent_content.")] = False,
    ) -> CallToolResult:
        return _run(tools.recall_get, state, id=id, include_parent=include_parent)

    @server.tool(name="recall_list", annotations=_READ,
                 description="List what the knowledge base holds of one type, newest first (or by "
                 "title): code or documentation files, sessions, ADRs/decisions, playbooks, patterns, "
                 "or any recall_add type. Use it to browse; use recall_search to find something by meaning.")
    def recall_list(
        type: Annotated[str, Field(description="code, documentation, session, adr (decision), playbook "
                                   "(runbook), pattern, failure, lesson, or a type given to recall_add.")],
        scope: Annotated[Literal["project", "global", "all"], Field(
            description="'project' = the project's context, 'global' = the 'global' context, 'all' = both.")] = "project",
        limit: Annotated[int, Field(ge=1, le=100, description="Maximum number of entries.")] = 20,
        sort: Annotated[Literal["updated_at", "created_at", "title"], Field(
            description="Newest first by updated_at or created_at, or A-Z by title.")] = "updated_at",
    ) -> CallToolResult:
        from chinvex.mcp.recall_list import recall_list as tool

        return _run(tool, state, type=type, scope=scope, limit=limit, sort=sort)

    @server.tool(name="recall_context", annotations=_READ,
                 description="Everything known about one file before you edit it: its indexed chunks "
                 "(definitions and line ranges), docs and notes that mention it, sessions and chats that "
                 "read or changed it, and decisions recorded about it. Use it instead of several searches "
                 "for the file's name.")
    def recall_context(
        file_path: Annotated[str, Field(description="The file, absolute or relative to the project.")],
        context_types: Annotated[list[str] | None, Field(
            description="Sections: related_code, documentation, adrs, recent_changes, ownership. "
            "Omit for related_code, documentation and adrs.")] = None,
    ) -> CallToolResult:
        from chinvex.mcp.recall_context import recall_context as tool

        return _run(tool, state, file_path=file_path, context_types=context_types)


def _add_recall_write_tools(server: ChinvexMCPServer, state: ServerState) -> None:
    """RECALL's write tools: index a path now, promote an item to global, add an item, and
    record whether a retrieved item helped."""

    @server.tool(name="recall_index", annotations=_WRITE,
                 description="Index a file or folder of the project now (e.g. a note you just wrote), "
                 "instead of waiting for the next ingest. Only paths inside the project context's source "
                 "folders; it runs that context's incremental ingest. Use sparingly.")
    def recall_index(
        path: Annotated[str, Field(description="File or folder, absolute or relative to the project.")],
        recursive: Annotated[bool, Field(description="Accepted for RECALL compatibility: a folder is "
                                         "always indexed whole, as its context's ingest walks it.")] = False,
        type_hint: Annotated[str | None, Field(description="code, documentation, adr or playbook; "
                                               "informational, the reading adapter decides.")] = None,
    ) -> CallToolResult:
        from chinvex.mcp.recall_index import recall_index as tool

        return _run(tool, state, path=path, recursive=recursive, type_hint=type_hint)

    @server.tool(name="recall_promote", annotations=_WRITE,
                 description="Move a project's knowledge item (from recall_add) to the global context, "
                 "for knowledge that holds across projects. Its id keeps working: the project keeps a "
                 "pointer that recall_get follows.")
    def recall_promote(
        item_id: Annotated[str, Field(description="The item's id, e.g. D-1a2b3c4d.")],
    ) -> CallToolResult:
        from chinvex.mcp.recall_promote import recall_promote as tool

        return _run(tool, state, item_id=item_id)

    @server.tool(name="recall_add", annotations=_WRITE,
                 description="Add a knowledge item (a decision, pattern, failure, lesson, runbook, ...) to "
                 "the knowledge base; it is searchable at once. Returns its id ({P,F,D,C,X,O,R,I}-xxxxxxxx). "
                 "Secrets in the text are redacted before storing.")
    def recall_add(
        type: Annotated[str, Field(description="Kind of knowledge: pattern, failure, decision, context, "
                                   "code, doc, runbook, lesson, note, ...")],
        title: Annotated[str, Field(description=f"Brief title (at most {limits.TITLE_MAX_CHARS} characters).")],
        content: Annotated[str, Field(description="Full content of the knowledge item (at most 1 MB).")],
        tags: Annotated[list[str] | None, Field(description="Optional tags for categorization.")] = None,
        scope: Annotated[Literal["project", "global"], Field(
            description="Where to store: the project's context, or the context named 'global'.")] = "project",
        related_files: Annotated[list[str] | None, Field(
            description="File paths this knowledge relates to.")] = None,
    ) -> CallToolResult:
        return _run(tools.recall_add, state, type=type, title=title, content=content, tags=tags, scope=scope,
                    related_files=related_files)

    @server.tool(name="recall_feedback", annotations=_WRITE,
                 description="Record whether a retrieved item was useful for the current task (use after "
                 "recall_search). Give useful=true/false, or feedback = useful | not_useful | outdated | "
                 "duplicate. Returns the item's updated counts.")
    def recall_feedback(
        item_id: Annotated[str, Field(description="ID of the item (from recall_search results).")],
        useful: Annotated[bool | None, Field(description="True if the item helped, false if not.")] = None,
        feedback: Annotated[Literal["useful", "not_useful", "outdated", "duplicate"] | None, Field(
            description="Finer feedback than useful: outdated (stale information), duplicate (same as "
            "another item).")] = None,
        context: Annotated[str | None, Field(
            description="Optional reason why the item was or wasn't useful.")] = None,
        duplicate_of: Annotated[str | None, Field(
            description="With feedback='duplicate': the id of the item this one duplicates.")] = None,
    ) -> CallToolResult:
        return _run(tools.recall_feedback, state, item_id=item_id, useful=useful, feedback=feedback,
                    context=context, duplicate_of=duplicate_of)


def _add_flight_recorder_tool(server: ChinvexMCPServer, state: ServerState) -> None:
    """The session's own log of events (stored locally, never indexed)."""

    @server.tool(name="flight_recorder_log", annotations=_WRITE,
                 description="Log a significant event to the local flight recorder for session continuity: "
                 "decisions (with rationale), errors (with resolution), milestones, agent switches, "
                 "observations, retrieval_judgment. Stored locally, never indexed for search.")
    def flight_recorder_log(
        type: Annotated[str, Field(description="Event type: decision, error, milestone, agent_switch, "
                                   "observation, retrieval_judgment, ...")],
        content: Annotated[str, Field(description="Brief description of the event.")],
        rationale: Annotated[str | None, Field(description="For decisions: why this choice was made.")] = None,
        metadata: Annotated[dict[str, Any] | None, Field(
            description="Any JSON object, e.g. {\"kept\": [...], \"dropped\": [...]} for a retrieval_judgment.")] = None,
        resolution: Annotated[str | None, Field(description="For errors: how it was resolved.")] = None,
        from_agent: Annotated[str | None, Field(description="For agent_switch: previous agent mode.")] = None,
        to_agent: Annotated[str | None, Field(description="For agent_switch: new agent mode.")] = None,
        related_files: Annotated[list[str] | None, Field(description="Files related to this event.")] = None,
    ) -> CallToolResult:
        return _run(tools.flight_recorder_log, state, type=type, content=content, rationale=rationale,
                    metadata=metadata, resolution=resolution, from_agent=from_agent, to_agent=to_agent,
                    related_files=related_files)


def _keep_profile_tools(server: ChinvexMCPServer, state: ServerState) -> None:
    """Remove the tools the session's profile does not select."""
    from chinvex.mcp.profiles import ALL, profile_name, selected

    wanted = set(selected(profile_name(state.env)))
    for name in ALL:
        if name not in wanted:
            server.remove_tool(name)


def serve(default_context: str | None = None) -> None:
    """Run until the client closes stdin. Nothing is resolved or loaded before the handshake: a
    --context that does not exist gets a warning on stderr from a background thread and is
    reported by every tool that needs it (the server still starts; the context may be created
    later), and the registry is read on each call."""
    from chinvex.mcp.context_warning import ContextCheck

    check = ContextCheck(default_context)
    check.start()
    state = ServerState(default_context)
    server = build_server(state)
    try:
        server.run("stdio")
    finally:
        state.close()
        check.wait()
