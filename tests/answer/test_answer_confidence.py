"""Issue 39: the calibrated answer gate. The features it reads are a pure function of the
evidence, the packaged model gives probabilities, the refusal point is honoured from the CLI
(--min-confidence), from context.json (answer.min_confidence) and from the library, and every
answer carries its confidence (CLI --json and human output, the response model)."""

from __future__ import annotations

import json
import math
import shutil

import pytest
from helpers import BENCH_DATA, assert_no_traceback, run_cli, run_cli_in_process
from pydantic import ValidationError
from support_cases import TALK, result, verdict_for

from chinvex.answer.confidence import FEATURES, GateModel, default_min_confidence, gate_model
from chinvex.models import AnswerResponse, Retrieval

# -- features and model (pure) ------------------------------------------------------------------


def test_the_features_of_an_answer_are_a_pure_function_of_its_evidence():
    question = "When did Caroline go to the LGBTQ support group?"
    _, _, first, _ = verdict_for(question, [result(TALK)])
    _, _, second, _ = verdict_for(question, [result(TALK)])
    assert first.ok and first.features is not None
    assert list(first.features) == list(FEATURES)
    assert first.features == second.features and first.confidence == second.confidence
    assert all(isinstance(v, float) and math.isfinite(v) for v in first.features.values())
    assert first.features["passes_rules"] == 1.0 and first.features["asks_person"] == 1.0


def test_a_weaker_statement_gets_a_lower_confidence():
    _, _, clear, _ = verdict_for("When did Caroline go to the LGBTQ support group?", [result(TALK)])
    _, _, vague, _ = verdict_for("What did Caroline realize at the LGBTQ support group meeting?", [result(TALK)])
    assert vague.confidence is not None and clear.confidence is not None
    assert vague.confidence < clear.confidence


def test_the_packaged_model_loads_and_gives_probabilities():
    model = gate_model()
    assert model.features == FEATURES and len(model.weights) == len(FEATURES)
    assert 0.0 < default_min_confidence() < 1.0 and default_min_confidence() == model.threshold
    for value in (-1e6, -1.0, 0.0, 0.5, 1.0, 1e6):
        p = model.probability({name: value for name in FEATURES})
        assert 0.0 <= p <= 1.0
    assert 0.0 <= model.probability({}) <= 1.0, "missing features read as 0"


def test_a_model_file_whose_columns_do_not_match_is_refused():
    document = json.loads(gate_model().to_json())
    assert GateModel.from_document(document) == gate_model()
    document["weights"] = document["weights"][:-1]
    with pytest.raises(ValueError, match="one value per feature"):
        GateModel.from_document(document)


def test_the_response_model_carries_a_confidence_between_0_and_1():
    base = {"context": "c", "query": "q", "grounded": True, "answer": "a", "retrieval": Retrieval(k=8)}
    assert AnswerResponse(**base).confidence is None
    assert AnswerResponse(**base, confidence=0.83).model_dump()["confidence"] == 0.83
    with pytest.raises(ValidationError):
        AnswerResponse(**base, confidence=1.5)


# -- a small real context ------------------------------------------------------------------------

QUESTION = "When did Caroline go to the LGBTQ support group?"


@pytest.fixture(scope="module")
def talk(tmp_path_factory):
    """Two sessions of a LoCoMo conversation as notes, indexed with the built-in embedder."""
    base = tmp_path_factory.mktemp("answer_confidence")
    notes = base / "locomo"
    notes.mkdir()
    for n in (1, 2):
        shutil.copy2(BENCH_DATA / "locomo" / "conv-26" / f"session_0{n}.md", notes)
    env = {"CHINVEX_HOME": str(base / "home"), "ANONYMIZED_TELEMETRY": "False"}
    assert run_cli_in_process("context", "create", "talk", "--note-root", str(notes), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "talk", env=env).code == 0
    return env


def _answer(env, *flags: str):
    result = run_cli("answer", "--context", "talk", *flags, QUESTION, env=env)
    assert_no_traceback(result)
    return result


def test_min_confidence_0_answers_and_1_refuses(talk):
    answered = _answer(talk, "--json", "--min-confidence", "0.0")
    assert answered.code == 0, answered
    doc = answered.json
    assert doc["grounded"] is True and doc["citations"] and 0.0 < doc["confidence"] <= 1.0
    refused = _answer(talk, "--json", "--min-confidence", "1.0")
    assert refused.code == 1, refused
    doc = refused.json
    assert doc["grounded"] is False and doc["citations"] == []
    assert doc["errors"][0]["code"] == "GROUNDING_FAILED" and "confidence" in doc["errors"][0]["detail"]
    assert doc["confidence"] == answered.json["confidence"], "the same sentence, the same confidence"


def test_the_human_output_says_the_confidence(talk):
    shown = _answer(talk, "--min-confidence", "0.0")
    assert shown.code == 0 and "confidence 0." in shown.stdout, shown


def test_a_min_confidence_outside_0_to_1_is_a_usage_error(talk):
    bad = _answer(talk, "--json", "--min-confidence", "1.5")
    assert bad.code == 2 and "--min-confidence must be between 0 and 1" in bad.stdout + bad.stderr, bad


def test_context_json_sets_the_refusal_point_and_the_flag_overrides_it(talk, tmp_path):
    from pathlib import Path

    path = Path(talk["CHINVEX_HOME"]) / "contexts" / "talk" / "context.json"
    original = path.read_text("utf-8")
    config = json.loads(original)
    config["answer"] = {**(config.get("answer") or {}), "min_confidence": 1.0}
    path.write_text(json.dumps(config), "utf-8")
    try:
        assert _answer(talk, "--json").code == 1, "answer.min_confidence 1.0 refuses"
        assert _answer(talk, "--json", "--min-confidence", "0").code == 0, "the flag overrides it"
    finally:
        path.write_text(original, "utf-8")


def test_the_library_takes_min_confidence(talk, monkeypatch):
    import chinvex

    monkeypatch.setenv("CHINVEX_HOME", talk["CHINVEX_HOME"])
    with chinvex.open("talk") as engine:
        open_gate = engine.answer(QUESTION, min_confidence=0.0)
        shut = engine.answer(QUESTION, min_confidence=1.0)
    assert open_gate.grounded and open_gate.confidence is not None
    assert not shut.grounded and shut.confidence == open_gate.confidence


def test_an_llm_answer_passes_the_same_gate_with_the_same_confidence(talk, monkeypatch):
    """Through the Anthropic SDK against a loopback server speaking the Messages API
    (tests/loopback_servers.py): an answer citing every evidence chunk rests on the same best
    sentence as the extractive answer, so it gets the same confidence and the same refusal point."""
    from loopback_servers import anthropic_server, chunk_ids_in, user_text

    from chinvex.answer.service import answer
    from chinvex.context.registry import Registry

    def cite_all(body) -> str:
        ids = chunk_ids_in(user_text(body))
        return "Caroline went to the support group on 7 May 2023 " + "".join(f"[chunk:{i}]" for i in ids) + "."

    monkeypatch.setenv("CHINVEX_HOME", talk["CHINVEX_HOME"])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-loopback-test-key")
    config = Registry().resolve("talk")
    extractive = answer(config, QUESTION, min_confidence=0.0)
    with anthropic_server(cite_all) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        passed = answer(config, QUESTION, generator="anthropic", min_confidence=0.0)
        shut = answer(config, QUESTION, generator="anthropic", min_confidence=1.0)
    assert passed.grounded and passed.retrieval.generator == "anthropic", passed.errors
    assert passed.confidence == extractive.confidence
    assert not shut.grounded and "confidence" in shut.errors[0].detail
    assert shut.confidence == extractive.confidence
