"""Issue 7: the anthropic and ollama generators, through their official SDKs.

The real Anthropic API and a real Ollama daemon cannot be reached here (no network, no local
models), so each test starts a loopback server on 127.0.0.1 (tests/loopback_servers.py) that
speaks the documented wire format — Messages API `POST /v1/messages`, Ollama `POST /api/chat` —
and scripts the model's reply. Everything else is real: the index (a real ChatGPT export
fixture, ingested with the built-in embedder), retrieval, the SDK clients and the grounding gate.
"""

from __future__ import annotations

import json
import socket

from loopback_servers import anthropic_server, chunk_ids_in, ollama_server, user_text

from helpers import REPO_ROOT, assert_no_traceback, run_cli

QUESTION = "Which index is missing for the slow orders query?"
KEY = "sk-ant-loopback-test-key"


def _answer(config, **kwargs):
    from chinvex.answer.service import answer

    return answer(config, QUESTION, **kwargs)


def _cite_first(body) -> str:
    ids = chunk_ids_in(user_text(body))
    return f"The orders query lacks an index on customer_id; add a composite index [chunk:{ids[0]}]."


def _assert_refused(response, detail_part: str) -> None:
    assert response.grounded is False
    assert response.answer == "Not stated in retrieved sources."
    assert response.citations == []
    assert [e.code for e in response.errors] == ["GROUNDING_FAILED"]
    assert detail_part in response.errors[0].detail
    assert response.evidence_pack.chunks, "the evidence is returned even when grounding fails"


# -- anthropic --------------------------------------------------------------------------------


def test_anthropic_cited_answer_is_grounded(lore, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with anthropic_server(_cite_first) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        response = _answer(lore["config"], generator="anthropic")
    assert response.grounded is True, response.errors
    evidence_ids = [c.chunk_id for c in response.evidence_pack.chunks]
    assert [c.chunk_id for c in response.citations] == [evidence_ids[0]]
    assert "[chunk:" in response.answer and response.errors == []
    assert response.retrieval.generator == "anthropic" and response.retrieval.model
    # what went over the wire: the seed spec's rules, every evidence chunk under its id
    body, headers = server.requests[0], server.headers[0]
    assert KEY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))
    assert headers.get("anthropic-version")
    assert "You MUST cite chunk IDs for every factual claim" in body["system"]
    assert "Not stated in retrieved sources." in body["system"]
    assert body["max_tokens"] > 0 and body["model"] == "claude-sonnet-5-5"
    prompt = user_text(body)
    assert QUESTION in prompt and chunk_ids_in(prompt) == evidence_ids


def test_anthropic_answer_without_citations_fails_grounding(lore, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with anthropic_server(lambda body: "You should add an index on customer_id.") as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        response = _answer(lore["config"], generator="anthropic")
    _assert_refused(response, "cites no chunk")


def test_anthropic_citing_an_id_outside_the_evidence_fails_grounding(lore, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with anthropic_server(lambda body: "Add an index on customer_id [chunk:0123456789ab].") as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        response = _answer(lore["config"], generator="anthropic")
    _assert_refused(response, "0123456789ab")


def test_a_cited_answer_the_cited_chunk_does_not_say_fails_the_same_gate(lore, monkeypatch):
    """Form is not enough: the cited chunk must say what the question asks (support.judge on the
    sentences of the cited chunks), as for the extractive generator."""
    from chinvex.answer.service import answer

    def unsupported(body):
        ids = chunk_ids_in(user_text(body))
        return f"The capital of Australia is Canberra [chunk:{ids[0]}]."

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with anthropic_server(unsupported) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        response = answer(lore["config"], "What is the capital of Australia?", generator="anthropic")
    _assert_refused(response, "The cited sources do not say it")


def test_anthropic_refusal_is_not_grounded(lore, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with anthropic_server(lambda body: "Not stated in retrieved sources.") as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        response = _answer(lore["config"], generator="anthropic")
    _assert_refused(response, "No retrieved chunk supports")


def test_anthropic_one_uncited_paragraph_fails_the_whole_answer(lore, monkeypatch):
    def reply(body):
        return _cite_first(body) + "\n\nAlso, Postgres 17 made such indexes twice as fast."

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with anthropic_server(reply) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        response = _answer(lore["config"], generator="anthropic")
        loose = _answer(lore["config"], generator="anthropic", grounded=False)
    _assert_refused(response, "Paragraph 2 cites no chunk")
    # --no-grounded: the generator's text, the valid citations it has, grounded=false
    assert loose.grounded is False and "Postgres 17" in loose.answer
    assert [c.chunk_id for c in loose.citations] == [loose.evidence_pack.chunks[0].chunk_id]
    assert [e.code for e in loose.errors] == ["GROUNDING_FAILED"]


def test_no_grounded_with_a_passing_answer_is_grounded(lore, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with anthropic_server(_cite_first) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        response = _answer(lore["config"], generator="anthropic", grounded=False)
    assert response.grounded is True and response.errors == [] and response.citations


def test_anthropic_without_a_key_is_a_generator_error(lore, monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    response = _answer(lore["config"], generator="anthropic")
    assert response.grounded is False and [e.code for e in response.errors] == ["GENERATOR_ERROR"]
    assert "ANTHROPIC_API_KEY" in response.errors[0].detail
    assert response.evidence_pack.chunks


def test_anthropic_server_error_is_a_generator_error(lore, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with anthropic_server(_cite_first, status=500) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        response = _answer(lore["config"], generator="anthropic")
    assert [e.code for e in response.errors] == ["GENERATOR_ERROR"]
    assert "500" in response.errors[0].detail


# -- ollama -----------------------------------------------------------------------------------


def _ollama_config(config, host: str, model: str = "llama3.2"):
    from chinvex.models import AnswerConfig

    return config.model_copy(update={"answer": AnswerConfig(generator="ollama", model=model, host=host)})


def test_ollama_chosen_by_context_config_and_grounded(lore):
    with ollama_server(_cite_first) as server:
        response = _answer(_ollama_config(lore["config"], server.url, model="qwen2.5:0.5b"))
    assert response.grounded is True, response.errors
    assert response.retrieval.generator == "ollama" and response.retrieval.model == "qwen2.5:0.5b"
    body = server.requests[0]
    assert body["model"] == "qwen2.5:0.5b" and body["stream"] is False
    assert body["options"]["temperature"] == 0
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user"] and "You MUST cite chunk IDs" in body["messages"][0]["content"]


def test_ollama_answer_without_citations_fails_grounding(lore):
    with ollama_server(lambda body: "Add an index on customer_id.") as server:
        response = _answer(_ollama_config(lore["config"], server.url))
    _assert_refused(response, "cites no chunk")


def test_ollama_citing_an_id_outside_the_evidence_fails_grounding(lore):
    with ollama_server(lambda body: "Add an index [chunk:deadbeef0000].") as server:
        response = _answer(_ollama_config(lore["config"], server.url))
    _assert_refused(response, "deadbeef0000")


def test_ollama_missing_model_is_a_generator_error_with_a_hint(lore):
    with ollama_server(_cite_first, status=404) as server:
        response = _answer(_ollama_config(lore["config"], server.url, model="nope:1b"))
    assert [e.code for e in response.errors] == ["GENERATOR_ERROR"]
    assert "ollama pull nope:1b" in response.errors[0].detail


def test_ollama_unreachable_is_a_generator_error(lore):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    response = _answer(_ollama_config(lore["config"], f"http://127.0.0.1:{port}"))
    assert [e.code for e in response.errors] == ["GENERATOR_ERROR"]
    assert response.evidence_pack.chunks


# -- through the CLI --------------------------------------------------------------------------


def test_cli_generator_flag_anthropic(lore):
    env = {"CHINVEX_HOME": str(lore["home"]), "ANTHROPIC_API_KEY": KEY}
    with anthropic_server(_cite_first) as server:
        env["ANTHROPIC_BASE_URL"] = server.url
        good = run_cli("answer", "--context", "lore", "--generator", "anthropic", "--json", QUESTION, env=env)
    assert good.code == 0, good
    assert good.json["grounded"] is True and good.json["retrieval"]["generator"] == "anthropic"
    with anthropic_server(lambda body: "Just add an index.") as server:
        env["ANTHROPIC_BASE_URL"] = server.url
        bad = run_cli("answer", "--context", "lore", "--generator", "anthropic", "--json", QUESTION, env=env)
        loose = run_cli("answer", "--context", "lore", "--generator", "anthropic", "--no-grounded", QUESTION, env=env)
    assert bad.code == 1 and bad.json["errors"][0]["code"] == "GROUNDING_FAILED", bad
    assert loose.code == 0 and "Just add an index." in loose.stdout and "not grounded" in loose.stdout, loose
    assert_no_traceback(bad)


def test_cli_generator_flag_ollama_and_generator_error_exit(lore):
    env = {"CHINVEX_HOME": str(lore["home"])}
    with ollama_server(_cite_first) as server:
        env["OLLAMA_HOST"] = server.url
        good = run_cli("answer", "--context", "lore", "--generator", "ollama", "--model", "qwen3:4b", "--json",
                       QUESTION, env=env)
    assert good.code == 0 and good.json["grounded"] is True, good
    assert good.json["retrieval"]["model"] == "qwen3:4b" and server.requests[0]["model"] == "qwen3:4b"
    with ollama_server(_cite_first, status=500) as server:
        env["OLLAMA_HOST"] = server.url
        failed = run_cli("answer", "--context", "lore", "--generator", "ollama", QUESTION, env=env)
    assert failed.code == 1 and "Ollama error 500" in failed.stderr, failed
    assert_no_traceback(failed)


def test_cli_unknown_generator_is_a_usage_error(lore):
    result = run_cli("answer", "--context", "lore", "--generator", "gpt", QUESTION,
                     env={"CHINVEX_HOME": str(lore["home"])})
    assert result.code == 2 and "extractive, anthropic, ollama" in result.stderr, result
    assert_no_traceback(result)


def test_json_output_is_the_schema_document_exactly(lore, monkeypatch):
    import jsonschema

    schema = json.loads((REPO_ROOT / "schemas" / "answer_response.schema.json").read_text())
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with anthropic_server(_cite_first) as server:
        result = run_cli("answer", "--context", "lore", "--generator", "anthropic", "--json", QUESTION,
                         env={"CHINVEX_HOME": str(lore["home"]), "ANTHROPIC_BASE_URL": server.url})
    doc = result.json
    jsonschema.validate(doc, schema)
    assert set(doc) == {"schema_version", "context", "query", "grounded", "answer", "confidence", "citations",
                        "evidence_pack", "retrieval", "errors"}
    citation = doc["citations"][0]
    assert set(citation) == {"chunk_id", "source_uri", "range", "where", "quote"} and citation["where"]
    assert citation["range"]["char_start"] is not None  # a conversation chunk: a char range
