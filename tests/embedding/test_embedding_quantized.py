"""The built-in model with integer matrix products (all-MiniLM-L6-v2-q8), derived for real from
the installed default model by onnxruntime's quantizer and run by onnxruntime.

Checked against the default model itself: the same network, so its vectors must stay close to
the default's (cosine > 0.97 on every text) while not being the default's; the derived file
must carry the pinned hash, be kept and reused, and be derived again when damaged; a context
configured for it ingests and searches, and switching an index to it asks for a full re-embed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import run_cli, run_cli_in_process

from chinvex.embedding import quantized
from chinvex.embedding.builtin import ENV_MODEL_PATH, ENV_MODEL_SHA256, BuiltinEmbedder
from chinvex.ids import file_sha256
from chinvex.embedding.factory import make_embedder
from chinvex.embedding.quantized import QUANTIZED_MODEL_ID, QUANTIZED_SHA256, derived_path
from chinvex.errors import EmbedderError
from chinvex.models import EmbeddingConfig

TEXTS = [
    "def parse_config(path):\n    with open(path) as fh:\n        return json.load(fh)",
    "Hybrid search blends BM25 with vector similarity.",
    "x",
    "The quick brown fox jumps over the lazy dog. " * 12,
    "Ingest records every run in ingest_runs with counts and per-source errors.",
]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def derived(models: Path) -> Path:
    """Derived for real, once for the module, into its own folder."""
    path = quantized.quantized_model(BuiltinEmbedder()._locate(), models)
    assert path == derived_path(models) and file_sha256(path) == QUANTIZED_SHA256
    return path


@pytest.fixture(scope="module")
def embedder() -> BuiltinEmbedder:
    """Loaded on first use, from the machine's kept file (derived then if missing)."""
    return BuiltinEmbedder(quantized=True)


def test_chosen_by_its_model_name_and_named_apart_from_the_default():
    emb = make_embedder(EmbeddingConfig(provider="builtin", model=QUANTIZED_MODEL_ID))
    assert isinstance(emb, BuiltinEmbedder) and emb.quantized
    assert emb.name == "builtin:all-MiniLM-L6-v2-q8" != BuiltinEmbedder().name
    with pytest.raises(EmbedderError, match="all-MiniLM-L6-v2-int8 \\(the default\\) and all-MiniLM-L6-v2-q8"):
        make_embedder(EmbeddingConfig(provider="builtin", model="all-MiniLM-L12-v2"))


def test_close_to_the_default_model_but_not_the_same(embedder):
    vectors = embedder.embed_documents(TEXTS)
    assert embedder.model_file == derived_path()
    reference = BuiltinEmbedder().embed_documents(TEXTS)
    assert vectors.shape == reference.shape and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * reference).sum(axis=1)
    assert cosines.min() > 0.97, cosines
    assert not np.allclose(vectors, reference, atol=1e-4)  # really the integer model
    # Deterministic, and a text's vector does not depend on the texts embedded with it (its
    # activations are quantized per tensor, so it must run alone: batched, this fails).
    np.testing.assert_array_equal(vectors, embedder.embed_documents(TEXTS))
    companions = ["short", "a much longer companion sentence " * 20] + TEXTS[::-1]
    np.testing.assert_array_equal(embedder.embed_documents(companions)[2:][::-1], vectors)
    for i, text in enumerate(TEXTS):
        np.testing.assert_array_equal(embedder.embed_query(text), vectors[i])


def test_meaning_survives_quantization(embedder):
    anchor, paraphrase, unrelated = embedder.embed_documents([
        "How do I reset my password?",
        "Steps to recover a forgotten login password",
        "The stock market fell sharply today",
    ])
    assert float(anchor @ paraphrase) > float(anchor @ unrelated) + 0.3


def test_the_derived_file_is_kept_and_a_damaged_one_derived_again(models, derived):
    path = derived
    kept = path.stat().st_mtime_ns
    assert quantized.quantized_model(BuiltinEmbedder()._locate(), models) == path
    assert path.stat().st_mtime_ns == kept  # reused, not derived again
    path.write_bytes(path.read_bytes()[:1000])  # cut short, as by a full disk
    assert quantized.quantized_model(BuiltinEmbedder()._locate(), models) == path
    assert file_sha256(path) == QUANTIZED_SHA256
    assert not list(models.glob(".q8-*"))  # no scratch file left behind


def test_a_derivation_that_comes_out_differently_is_refused(tmp_path, monkeypatch):
    def other_quantizer(source: Path, target: Path) -> None:
        target.write_bytes(b"a model some other onnxruntime release made")

    monkeypatch.setattr(quantized, "derive", other_quantizer)
    with pytest.raises(EmbedderError, match=f"not the {QUANTIZED_SHA256}"):
        quantized.quantized_model(BuiltinEmbedder()._locate(), tmp_path)
    assert not derived_path(tmp_path).exists() and not list(tmp_path.glob(".q8-*"))


def test_a_source_that_is_no_model_gives_a_one_line_error(tmp_path):
    source = tmp_path / "model.onnx"
    source.write_bytes(b"not an onnx graph")
    with pytest.raises(EmbedderError, match="Cannot derive the all-MiniLM-L6-v2-q8 model from .*model.onnx") as info:
        quantized.derive(source, tmp_path / "out.onnx")
    assert "\n" not in str(info.value)


def test_without_onnx_it_says_which_extra_to_install(tmp_path, monkeypatch):
    # Python's documented way to make an import fail: a None entry in sys.modules.
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(EmbedderError, match=r"pip install 'chinvex\[q8\]'"):
        quantized.quantized_model(BuiltinEmbedder()._locate(), tmp_path)


def test_kept_where_chinvex_models_dir_says(tmp_path, monkeypatch):
    monkeypatch.setenv(quantized.ENV_MODELS_DIR, str(tmp_path / "shared"))
    assert derived_path() == tmp_path / "shared" / f"{QUANTIZED_MODEL_ID}-{QUANTIZED_SHA256[:12]}.onnx"


def test_only_the_default_file_is_quantized(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_MODEL_PATH, str(tmp_path / "other.onnx"))
    monkeypatch.setenv(ENV_MODEL_SHA256, "0" * 64)
    with pytest.raises(EmbedderError, match="derived from the default model file only"):
        BuiltinEmbedder(quantized=True)


def test_a_context_configured_for_it_ingests_searches_and_switching_asks_for_a_full_run(
        chinvex_home: Path, tmp_path: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "backup.md").write_text("# Backups\n\nThe nightly job copies the database to cold storage at 3 am.\n")
    (notes / "garden.md").write_text("# Garden\n\nTomatoes need full sun and water every other day.\n")
    assert run_cli_in_process("context", "create", "Q8", "--note-root", str(notes)).code == 0
    assert run_cli_in_process("ingest", "--context", "Q8", "--json").code == 0  # the default model

    path = chinvex_home / "contexts" / "Q8" / "context.json"
    path.write_text(json.dumps({**json.loads(path.read_text()),
                                "embedding": {"provider": "builtin", "model": QUANTIZED_MODEL_ID}}))
    refused = run_cli_in_process("ingest", "--context", "Q8", "--json")
    assert refused.code != 0 and "--full" in refused.stdout + refused.stderr, refused

    summary = run_cli_in_process("ingest", "--context", "Q8", "--full", "--json")
    assert summary.code == 0, summary
    assert summary.json["embedder"] == "builtin:all-MiniLM-L6-v2-q8" and summary.json["chunks"]["embedded"] == 2
    found = run_cli("search", "--context", "Q8", "--mode", "vector", "--json", "when are the files archived?",
                    env={"CHINVEX_HOME": str(chinvex_home)})
    assert found.code == 0, found
    assert found.json["results"][0]["source_uri"].endswith("backup.md")
