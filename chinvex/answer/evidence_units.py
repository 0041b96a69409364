"""Which kind each evidence chunk is (code, dialogue or prose), and its units cut accordingly."""

from __future__ import annotations

from chinvex.answer.code_units import code_units
from chinvex.answer.dialogue_units import dialogue_turns, dialogue_units
from chinvex.answer.prose_units import prose_units
from chinvex.answer.units import Unit


def chunk_kind(text: str, source_type: str, metadata: dict, speakers: frozenset[str] = frozenset()) -> str:
    """"code" for source code, "dialogue" for speaker-labelled transcripts, else "prose".

    `speakers` (lower-cased) are voices already seen in other chunks of the same evidence: a
    chunk holding one or two turns of a known speaker is part of that dialogue too."""
    kind = str(metadata.get("kind") or "").lower()
    language = str(metadata.get("language") or "").lower()
    if source_type == "repo" and (kind == "code" or metadata.get("symbols") or (
            language and language not in ("markdown", "text", "plaintext", "rst", "restructuredtext"))):
        return "code"
    if dialogue_turns(text, speakers) is not None:
        return "dialogue"
    return "prose"


def split_units(text: str, *, chunk: int, kind: str, speakers: frozenset[str] = frozenset()) -> list[Unit]:
    """The units of one chunk of the given kind (a "dialogue" with no turns reads as prose)."""
    if kind == "code":
        return code_units(text, chunk)
    if kind == "dialogue":
        turns = dialogue_turns(text, speakers)
        if turns is not None:
            return dialogue_units(turns, chunk, speakers)
    return prose_units(text, chunk)


def split_evidence(chunks: list[tuple[str, str, dict]]) -> tuple[list[str], list[Unit]]:
    """Kinds and units of (text, source_type, metadata) chunks. Two passes: dialogues found on
    their own name their speakers, then chunks with a few turns of those speakers join them."""
    kinds = [chunk_kind(text, st, meta) for text, st, meta in chunks]
    speakers: set[str] = set()
    for (text, _, _), kind in zip(chunks, kinds):
        if kind == "dialogue":
            speakers.update(t.name.lower() for t in (dialogue_turns(text) or []))
    known = frozenset(speakers)
    if known:
        kinds = [k if k != "prose" else chunk_kind(text, st, meta, known)
                 for (text, st, meta), k in zip(chunks, kinds)]
    units: list[Unit] = []
    for i, ((text, _, _), kind) in enumerate(zip(chunks, kinds)):
        units.extend(split_units(text, chunk=i, kind=kind, speakers=known))
    return kinds, units
