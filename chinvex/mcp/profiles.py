"""Which tools `chinvex mcp` lists: every tool's name, description and schema is read by the
agent's model at the start of every session, so the default list is short.

- `default`: chinvex_search, chinvex_answer, chinvex_pack, chinvex_get_chunks, chinvex_blame —
  find, answer, assemble, read, and who wrote a line; under 4,000 characters of tools/list
  (bench/mcp_server.py measures it);
- `recall`: the RECALL spec's tools (recall_*, flight_recorder_log) for EDI-style workflows;
- `all`: both, plus chinvex_list_contexts;
- or names separated by commas.

Chosen with `chinvex mcp --tools P` or the environment variable CHINVEX_MCP_TOOLS (which the
client's server entry can set), read once when the server starts.
"""

from __future__ import annotations

from collections.abc import Mapping

ENV_TOOLS = "CHINVEX_MCP_TOOLS"
CORE = ("chinvex_answer", "chinvex_search", "chinvex_pack", "chinvex_get_chunks", "chinvex_blame")
RECALL = ("recall_search", "recall_get", "recall_list", "recall_context", "recall_add", "recall_index",
          "recall_promote", "recall_feedback", "flight_recorder_log")
ALL = (*CORE, "chinvex_list_contexts", *RECALL)
PROFILES: dict[str, tuple[str, ...]] = {"default": CORE, "recall": RECALL, "all": ALL}
RECORDED_PROFILES = ("default", "all")
"""Profiles whose tools/list the handshake recording holds (others are answered by the SDK)."""


class UnknownToolsError(ValueError):
    pass


def profile_name(env: Mapping[str, str]) -> str:
    return (env.get(ENV_TOOLS) or "default").strip() or "default"


def selected(value: str) -> tuple[str, ...]:
    """The tool names a profile or comma list stands for, in the order they are listed."""
    value = value.strip() or "default"
    if value in PROFILES:
        return PROFILES[value]
    names = tuple(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    unknown = [n for n in names if n not in ALL]
    if unknown or not names:
        raise UnknownToolsError(
            f"{ENV_TOOLS} / --tools {value!r}: unknown tool(s) {', '.join(unknown) or '(none given)'}; "
            f"use default, recall, all, or names from: {', '.join(ALL)}")
    return names
