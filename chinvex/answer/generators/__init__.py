"""Which answer generators exist and how to build one from a context's settings.

A registry of names like the adapters' (chinvex.plugins): the built-ins are listed by
`module:Class`, and a package adds a generator through the entry-point group
`chinvex.generators`. A generator class offers `from_settings(model=, host=)` (context.json
`answer.model` and `answer.host`, the CLI's `--model` overriding the model); one without it is
built with no arguments.

The implementations live beside this registry, one module each (`extractive`, `anthropic`,
`ollama`); the contract they implement is `chinvex.answer.base`, which imports none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chinvex import plugins
from chinvex.answer.base import DEFAULT_GENERATOR, Generator
from chinvex.errors import UsageError

if TYPE_CHECKING:
    from chinvex.models import ContextConfig

BUILTIN: dict[str, str] = {
    "extractive": "chinvex.answer.generators.extractive:ExtractiveGenerator",
    "anthropic": "chinvex.answer.generators.anthropic:AnthropicGenerator",
    "ollama": "chinvex.answer.generators.ollama:OllamaGenerator",
}
GROUP = "chinvex.generators"


def generator_names() -> list[str]:
    return plugins.names(BUILTIN, GROUP)


def generator_name(requested: str | None, config: ContextConfig) -> str:
    name = (requested or (config.answer.generator if config.answer else None) or DEFAULT_GENERATOR).strip().lower()
    if name not in BUILTIN and name not in generator_names():
        where = "--generator" if requested else "context.json answer.generator"
        raise UsageError(f"{where} {name!r}: expected one of {', '.join(generator_names())}")
    return name


def make_generator(name: str, config: ContextConfig, model: str | None = None) -> Generator:
    """The generator called `name`, configured from the context's `answer` settings (`model`
    overrides answer.model)."""
    settings = config.answer
    model = model or (settings.model if settings else None)
    host = settings.host if settings else None
    found = plugins.find(name, BUILTIN, GROUP)
    if found is None:
        raise UsageError(f"unknown generator {name!r}: expected one of {', '.join(generator_names())}")
    if hasattr(found, "from_settings"):
        return found.from_settings(model=model, host=host)
    return found() if isinstance(found, type) else found
