"""The grounding gate (seed spec §3): applied to every generator's output, never skipped.

Rules, in the order they are checked:
- the answer is not empty and is not the refusal itself;
- every `[chunk:<id>]` it cites is in the evidence pack (an id from anywhere else is an
  invention, whatever the rest of the answer says);
- every paragraph cites at least one chunk, except uncertainty paragraphs ("not stated",
  "not found", "I'm not sure", "unclear");
- at least one citation overall.

Paragraphs are separated by blank lines outside fenced code blocks; a fenced block belongs to
the paragraph before it (an LLM often follows a cited sentence with the code it quotes).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field

REFUSAL = "Not stated in retrieved sources."
UNCERTAINTY_MARKERS = ("not stated", "not found", "i'm not sure", "i’m not sure", "i am not sure", "unclear")

# `[chunk:abc123]`, `[chunk: abc123]`, `[chunk:abc123, chunk:def456]`, `[chunk:abc123; def456]`
_CITATION_GROUP = re.compile(r"\[\s*chunk\s*:\s*([^\]\n]{1,400})\]", re.IGNORECASE)
_ID = re.compile(r"(?:chunk\s*:\s*)?([A-Za-z0-9][A-Za-z0-9_.-]{0,127})", re.IGNORECASE)
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


def cite(chunk_id: str) -> str:
    """How an answer cites a chunk."""
    return f"[chunk:{chunk_id}]"


def cited_ids(text: str) -> list[str]:
    """Chunk ids cited in `text`, in order of first appearance."""
    found: dict[str, None] = {}
    for group in _CITATION_GROUP.finditer(text):
        for part in re.split(r"[,;\s]+", group.group(1)):
            match = _ID.fullmatch(part.strip()) if part.strip() else None
            if match:
                found.setdefault(match.group(1), None)
    return list(found)


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs; fenced code blocks stay whole and join the paragraph
    before them."""
    out: list[str] = []
    current: list[str] = []
    fence: str | None = None
    fenced_block = False

    def flush() -> None:
        nonlocal current, fenced_block
        block = "\n".join(current).strip()
        if block:
            if fenced_block and out and block.lstrip().startswith(("```", "~~~")):
                out[-1] = out[-1] + "\n\n" + block
            else:
                out.append(block)
        current, fenced_block = [], False

    for line in text.splitlines():
        opening = _FENCE.match(line)
        if fence is None and opening:
            if not current:
                fenced_block = True
            fence = opening.group(1)[0] * 3
            current.append(line)
            continue
        if fence is not None:
            current.append(line)
            if line.strip().startswith(fence):
                fence = None
            continue
        if not line.strip():
            flush()
            continue
        current.append(line)
    flush()
    return out


def is_uncertain(paragraph: str) -> bool:
    low = paragraph.lower()
    return any(marker in low for marker in UNCERTAINTY_MARKERS)


def is_refusal(text: str) -> bool:
    return text.strip().strip('"“”').strip() == REFUSAL


@dataclass
class Grounding:
    ok: bool
    cited: list[str] = field(default_factory=list)  # valid ids, in order of appearance
    unknown: list[str] = field(default_factory=list)  # cited but not in the evidence pack
    detail: str = ""


def validate(answer: str, evidence_ids: Collection[str]) -> Grounding:
    """Check `answer` against the evidence pack's chunk ids; `detail` says why it failed."""
    known = set(evidence_ids)
    ids = cited_ids(answer)
    cited = [i for i in ids if i in known]
    unknown = [i for i in ids if i not in known]
    if not answer.strip():
        return Grounding(False, cited, unknown, "The generator returned an empty answer.")
    if is_refusal(answer):
        return Grounding(False, [], [], "No retrieved chunk supports a direct answer to this query.")
    if unknown:
        shown = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        return Grounding(False, cited, unknown,
                         f"The answer cites chunk(s) that are not in the evidence pack: {shown}.")
    for number, paragraph in enumerate(paragraphs(answer), start=1):
        if is_uncertain(paragraph):
            continue
        if not cited_ids(paragraph):
            preview = " ".join(paragraph.split())[:80]
            return Grounding(False, cited, unknown,
                             f"Paragraph {number} cites no chunk: \"{preview}\".")
    if not cited:
        return Grounding(False, cited, unknown, "The answer cites no chunk of the evidence pack.")
    return Grounding(True, cited, unknown, "")
