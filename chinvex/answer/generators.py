"""Which answer generators exist and how to build one from a context's settings.

Kept apart from `chinvex.answer.base` (the generator contract the implementations import), so
that the contract never imports the implementations built on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chinvex.answer.base import DEFAULT_GENERATOR, GENERATORS, Generator
from chinvex.errors import UsageError

if TYPE_CHECKING:
    from chinvex.models import ContextConfig


def generator_name(requested: str | None, config: ContextConfig) -> str:
    name = (requested or (config.answer.generator if config.answer else None) or DEFAULT_GENERATOR).strip().lower()
    if name not in GENERATORS:
        raise UsageError(f"--generator {requested!r}: expected one of {', '.join(GENERATORS)}")
    return name


def make_generator(name: str, config: ContextConfig, model: str | None = None) -> Generator:
    """The generator called `name`, configured from the context's `answer` settings (`model`
    overrides answer.model)."""
    settings = config.answer
    model = model or (settings.model if settings else None)
    host = settings.host if settings else None
    if name == "extractive":
        from chinvex.answer.extractive import ExtractiveGenerator

        return ExtractiveGenerator()
    if name == "anthropic":
        from chinvex.answer.anthropic_gen import AnthropicGenerator

        return AnthropicGenerator(model=model, base_url=host)
    if name == "ollama":
        from chinvex.answer.ollama_gen import OllamaGenerator

        return OllamaGenerator(model=model, host=host)
    raise UsageError(f"unknown generator {name!r}: expected one of {', '.join(GENERATORS)}")
