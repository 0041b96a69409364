"""The models build their validators on first use (`defer_build`, chinvex.models): every one of
them must still build, and importing the package must not build those a search never uses."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pydantic


def _chinvex_models() -> list[type[pydantic.BaseModel]]:
    for name in ("chinvex.models", "chinvex.models.export"):  # every model module
        importlib.import_module(name)
    found: list[type[pydantic.BaseModel]] = []
    todo = list(pydantic.BaseModel.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("chinvex.models.") and not cls.__name__.startswith("_"):
            found.append(cls)
    return found


def test_every_model_builds():
    models = _chinvex_models()
    assert len(models) > 30
    for cls in models:
        cls.model_rebuild(force=True)
        assert cls.__pydantic_complete__, cls.__name__


def test_importing_the_models_builds_none_of_them():
    code = ("import chinvex.models as m\n"
            "print(sorted(c.__name__ for c in (m.ContextConfig, m.Chunk, m.Document, m.ConversationDoc,"
            " m.SearchResponse, m.AnswerResponse, m.GoldenFile) if c.__pydantic_complete__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout
    assert out.strip() == "[]"
