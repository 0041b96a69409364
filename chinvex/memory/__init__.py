"""Memories: what agents store through the RECALL tools (pitfalls, decisions, patterns, ...),
with their ids and types, redaction, indexing into the search index, feedback, usage stats,
the flight-recorder log and promotion between scopes. The MCP tools, the CLI and the web UI
parse, call these modules and format; the SQL lives in `chinvex.storage.memories`,
`chinvex.storage.feedback` and `chinvex.storage.events`."""
