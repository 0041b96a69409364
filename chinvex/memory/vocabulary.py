"""RECALL's vocabulary mapped onto chinvex's: memory ids and types, the source types a RECALL
type can be found in, and the RECALL type of a search result."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

MEMORY_SOURCE_TYPE = "memory"
"""The source type of a memory's indexed document (and of its doc id)."""
MEMORY_SCHEME = "memory://"

PREFIXES: dict[str, str] = {
    "pattern": "P", "failure": "F", "decision": "D", "context": "C", "code": "X", "doc": "O",
    "runbook": "R",
}
"""Codex's id prefixes (deep-dive §12); every other type gets `I`."""

TYPE_ALIASES: dict[str, str] = {
    "documentation": "doc", "docs": "doc", "adr": "decision", "playbook": "runbook",
    "failures": "failure", "patterns": "pattern", "decisions": "decision",
}
"""RECALL's spec and Codex name some types differently; both spellings mean the same thing."""

MEMORY_ID = re.compile(r"^[PFDCXORI]-[0-9a-f]{8}$")

CONVERSATION_SOURCE_TYPES = ("codex_session", "agent_session", "chat")
TYPE_SOURCES: dict[str, tuple[str, ...]] = {
    "code": ("repo", MEMORY_SOURCE_TYPE),
    "doc": ("repo", "note", MEMORY_SOURCE_TYPE),
    "session": CONVERSATION_SOURCE_TYPES,
}
"""Which source types can hold results of a RECALL type (anything else is a memory type)."""


def normalise_type(value: str) -> str:
    t = value.strip().lower().replace("-", "_").replace(" ", "_")
    return TYPE_ALIASES.get(t, t)


def prefix_for(memory_type: str) -> str:
    return PREFIXES.get(normalise_type(memory_type), "I")


def new_memory_id(memory_type: str) -> str:
    return f"{prefix_for(memory_type)}-{uuid.uuid4().hex[:8]}"


def memory_uri(item_id: str) -> str:
    return f"{MEMORY_SCHEME}{item_id}"


def result_type(source_type: str, metadata: Mapping[str, Any], memory: Mapping[str, Any] | None) -> str:
    """The RECALL type of a search result: a memory's own type, else what the chunk is."""
    if memory is not None:
        return normalise_type(str(memory["type"]))
    if source_type in CONVERSATION_SOURCE_TYPES:
        return "session"
    kind = metadata.get("kind")
    if source_type == "repo":
        return "code" if kind == "code" else "doc"
    if source_type == "note":
        return "code" if kind == "code" else "doc"
    return source_type


def source_types_for(types: Sequence[str]) -> list[str] | None:
    """Source types worth searching for the requested RECALL types (None: all of them).

    A chinvex source type given as a type (`repo`, `note`, ...) is accepted too.
    """
    from chinvex.models.documents import SOURCE_TYPES

    wanted: dict[str, None] = {}
    for t in types:
        t = normalise_type(t)
        if t in TYPE_SOURCES:
            wanted.update(dict.fromkeys(TYPE_SOURCES[t]))
        elif t in SOURCE_TYPES:
            wanted[t] = None
        else:
            wanted[MEMORY_SOURCE_TYPE] = None
    return list(wanted) or None


def type_matches(result_type_: str, source_type: str, types: Sequence[str]) -> bool:
    wanted = {normalise_type(t) for t in types}
    return result_type_ in wanted or source_type in wanted
