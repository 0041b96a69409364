"""The one interface every answer generator offers, and the choice among them.

A generator turns a question and its evidence into answer text citing `[chunk:<id>]`; it never
decides whether the answer is grounded (the gate in grounding.py does, the same way for all).
The choice: the `generator` argument (CLI `--generator`), else context.json `answer.generator`,
else `auto`: an LLM the user configured when it can be used (generators.choose_generator),
else `extractive`, which runs offline and deterministically.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Protocol

from chinvex.errors import ChinvexError

if TYPE_CHECKING:
    from chinvex.answer.evidence import Evidence
    from chinvex.answer.judgement import Analysis
    from chinvex.answer.text import TermWeights
    from chinvex.answer.units import Unit
    from chinvex.models import ContextConfig

AUTO = "auto"
"""Not a generator: the choice of one from what is configured (generators.choose_generator)."""
DEFAULT_GENERATOR = AUTO


class GeneratorError(ChinvexError):
    """The generator could not run (SDK missing, no API key, service unreachable, bad reply)."""

    code = "GENERATOR_ERROR"


@dataclass
class GenerationRequest:
    query: str
    evidence: list[Evidence]
    config: ContextConfig
    term_weights: Callable[[Iterable[str]], TermWeights] | None = None
    """Inverse document frequencies from the context's index."""
    said_on: Callable[[Evidence, Unit], date | None] | None = None
    min_cosine: float | None = None
    """Below this raw cosine of the best chunk the evidence is unrelated (support.RELATED_COSINE)."""
    analysis: Analysis | None = None
    """Every sentence of the evidence scored against the question (support.analyse), made once
    by the service: the extractive generator answers from it and the gate checks any answer
    against it."""
    weights_used: TermWeights | None = None
    """The day a passage was said or written (a turn's timestamp, a transcript's `Date:` line)."""

    def weights(self, stems: Iterable[str]) -> TermWeights:
        """Term weights from the index, or uniform ones when it cannot say (a refinement: an
        answer never fails over it)."""
        from chinvex.answer.text import TermWeights

        if self.term_weights is None:
            return TermWeights.uniform()
        try:
            return self.term_weights(stems)
        except Exception:
            return TermWeights.uniform()


@dataclass
class Generated:
    text: str
    model: str | None = None
    reason: str | None = None
    """Why a generator refused, when it can say (shown as the GROUNDING_FAILED detail)."""
    notes: dict[str, object] = field(default_factory=dict)
    quotes: dict[str, str] = field(default_factory=dict)
    """Chunk id -> the words of that chunk the answer rests on, when the generator knows them
    (the extractive one does); each citation carries its quote."""


class Generator(Protocol):
    name: str

    def generate(self, request: GenerationRequest) -> Generated: ...
