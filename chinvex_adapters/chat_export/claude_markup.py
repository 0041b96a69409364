"""The markup older claude.ai exports keep inside a message's `text`: before tool blocks
existed, the model wrote its private reasoning between `<antThinking>` tags and each version of
an artifact (a page, a script, a document) whole between `<antArtifact identifier=… type=…
title=…>` tags. Read as plain text, every reply would open with reasoning and carry full copies
of the artifact; split here, the reasoning becomes a thinking turn and each artifact version a
write of that artifact, so search and `blame` see the code as an edit, as they do for tools."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TAG = re.compile(r"<antThinking>(?P<thinking>.*?)</antThinking>"
                  r"|<antArtifact\b(?P<attrs>[^>]*)>(?P<body>.*?)</antArtifact>", re.S)
_ATTR = re.compile(r'([A-Za-z_][\w-]*)\s*=\s*"([^"]*)"')


@dataclass(frozen=True)
class Piece:
    kind: str  # text | thinking | artifact
    text: str
    attrs: dict[str, str] = field(default_factory=dict)


def split_markup(text: str) -> list[Piece]:
    """`text` as its words, reasoning and artifacts, in order. Text without the markup (or with
    a tag left open, as a cut-off reply leaves it) is one text piece, unchanged."""
    pieces: list[Piece] = []
    at = 0
    for match in _TAG.finditer(text):
        before = text[at:match.start()]
        if before.strip():
            pieces.append(Piece("text", before.strip()))
        if match.group("thinking") is not None:
            pieces.append(Piece("thinking", match.group("thinking").strip()))
        else:
            attrs = dict(_ATTR.findall(match.group("attrs") or ""))
            pieces.append(Piece("artifact", match.group("body").strip("\n"), attrs))
        at = match.end()
    rest = text[at:]
    if rest.strip() or not pieces:
        pieces.append(Piece("text", rest.strip() if pieces else text))
    return pieces
