"""Which answer generators exist, which one `auto` picks, and how to build one from a context's
settings.

A registry of names like the adapters' (chinvex.plugins): the built-ins are listed by
`module:Class`, and a package adds a generator through the entry-point group
`chinvex.generators`. A generator class offers `from_settings(model=, host=)` (context.json
`answer.model` and `answer.host`, the CLI's `--model` overriding the model); one without it is
built with no arguments.

`auto` (the default) is not a generator but a choice among the built-ins, made by
`choose_generator` from what the user configured: an LLM when one is configured and usable,
else `extractive`. It only ever contacts the configured (or default loopback) Ollama host, and
only when a model is configured; Anthropic is chosen on its key alone, without a request.

The implementations live beside this registry, one module each (`extractive`, `anthropic`,
`ollama`); the contract they implement is `chinvex.answer.base`, which imports none of them.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chinvex import plugins
from chinvex.answer.base import AUTO, DEFAULT_GENERATOR, Generator
from chinvex.errors import UsageError

if TYPE_CHECKING:
    from chinvex.models import ContextConfig

BUILTIN: dict[str, str] = {
    "extractive": "chinvex.answer.generators.extractive:ExtractiveGenerator",
    "anthropic": "chinvex.answer.generators.anthropic:AnthropicGenerator",
    "ollama": "chinvex.answer.generators.ollama:OllamaGenerator",
}
GROUP = "chinvex.generators"


@dataclass(frozen=True)
class Choice:
    """The generator an answer uses, and for `auto` what decided it."""

    name: str
    why: str | None = None
    """For `auto`: one line saying what it chose and why (None for a generator named outright)."""
    fell_back: bool = False
    """`auto` had an LLM configured but could not use it, so `extractive` answers: worth a warning."""


def generator_names() -> list[str]:
    return plugins.names(BUILTIN, GROUP)


def choose_generator(requested: str | None, config: ContextConfig, model: str | None = None) -> Choice:
    """The generator `requested` (CLI `--generator`), else context.json `answer.generator`, else
    `auto`, with `auto` resolved (`model`, the CLI's `--model`, overrides answer.model).
    An unknown name is a usage error naming where it came from."""
    name = (requested or (config.answer.generator if config.answer else None) or DEFAULT_GENERATOR).strip().lower()
    if name == AUTO:
        return _auto(config, model)
    if name not in BUILTIN and name not in generator_names():
        where = "--generator" if requested else "context.json answer.generator"
        raise UsageError(f"{where} {name!r}: expected one of {', '.join(generator_names() + [AUTO])}")
    return Choice(name)


def generator_name(requested: str | None, config: ContextConfig, model: str | None = None) -> str:
    """The name of the generator that will write the answer (`auto` resolved)."""
    return choose_generator(requested, config, model).name


def generator_warnings(requested: str | None, config: ContextConfig, model: str | None = None) -> list[str]:
    """What the response's warnings should say about the choice: why `auto` answers
    extractively although an LLM is configured (nothing otherwise). Asks no server again: the
    Ollama probe is remembered (ollama.probe)."""
    choice = choose_generator(requested, config, model)
    return [choice.why] if choice.fell_back and choice.why else []


def make_generator(name: str, config: ContextConfig, model: str | None = None) -> Generator:
    """The generator called `name` (`auto` resolved), configured from the context's `answer`
    settings (`model` overrides answer.model)."""
    if name.strip().lower() == AUTO:
        name = choose_generator(AUTO, config, model).name
    settings = config.answer
    model = model or (settings.model if settings else None)
    host = settings.host if settings else None
    found = plugins.find(name, BUILTIN, GROUP)
    if found is None:
        raise UsageError(f"unknown generator {name!r}: expected one of {', '.join(generator_names() + [AUTO])}")
    if hasattr(found, "from_settings"):
        return found.from_settings(model=model, host=host)
    return found() if isinstance(found, type) else found


def _auto(config: ContextConfig, model: str | None) -> Choice:
    """`auto`, in order: a Claude model (`claude-…`) configured -> anthropic when a key is set;
    any other model configured -> ollama when its server answers and lists that model;
    otherwise extractive. Evidence leaves the machine only for the service the context names: a
    key that happens to be in the environment is not a choice (chinvex is local-first), and a
    configured local model is never handed to Anthropic instead."""
    from chinvex.answer.generators import anthropic

    settings = config.answer
    model = (model or (settings.model if settings else None) or "").strip() or None
    if model is not None and anthropic.is_claude_model(model):
        if not anthropic.has_credentials():
            return _fallback(f"answer.model {model!r} is a Claude model but ANTHROPIC_API_KEY is not set")
        return _anthropic(f"anthropic ({model}, ANTHROPIC_API_KEY is set)")
    if model is not None:
        return _ollama(settings.host if settings else None, model)
    return Choice("extractive", "auto: extractive (no answer.model configured)")


def _ollama(host: str | None, model: str) -> Choice:
    from chinvex.answer.generators import ollama

    try:
        url = ollama.server_url(ollama.configured_host(host))
    except ValueError as exc:
        return _fallback(f"the Ollama host is not usable: {exc}")
    if not _installed("ollama"):
        return _fallback("ollama is configured but the 'ollama' package is not installed "
                         "(pip install 'chinvex[ollama]')")
    found = ollama.probe(url)
    if found.models is None:
        return _fallback(f"ollama not reachable at {url} ({found.problem})")
    if not found.serves(model):
        return _fallback(f"ollama at {url} does not list model {model!r} (ollama pull {model})")
    return Choice("ollama", f"auto: ollama ({model} at {url})")


def _anthropic(why: str) -> Choice:
    if not _installed("anthropic"):
        return _fallback("ANTHROPIC_API_KEY is set but the 'anthropic' package is not installed "
                         "(pip install 'chinvex[anthropic]')")
    return Choice("anthropic", f"auto: {why}")


def _fallback(reason: str) -> Choice:
    return Choice("extractive", f"auto: {reason} — extractive", fell_back=True)


def _installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None
