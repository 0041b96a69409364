"""Issue 39 item 5: `answer.generator: auto`, the default, uses the LLM the user configured when
it can, else the extractive generator, and says why when it falls back.

The real Ollama daemon and the real Anthropic API cannot be reached from the test machines, so
loopback servers on 127.0.0.1 (random ports, a thread each) stand in for these remote APIs,
speaking their documented wire formats: Ollama's `GET /api/tags` (the model list) and
`POST /api/chat` (https://github.com/ollama/ollama/blob/main/docs/api.md), and Anthropic's
Messages API `POST /v1/messages` (tests/loopback_servers.anthropic_server). Each stand-in counts
the connections it accepts, so a test can also say that nothing was contacted. Everything else
is real: a context over a real ChatGPT export ingested with the built-in embedder into SQLite and
Chroma, the `chinvex answer` CLI as a process, the official SDK clients and the grounding gate.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from helpers import assert_no_traceback, run_cli
from loopback_servers import anthropic_server, chunk_ids_in, ollama_server, user_text

QUESTION = "Which index is missing for the slow orders query?"
KEY = "sk-ant-loopback-test-key"
LLM_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_BASE_URL",
                 "OLLAMA_HOST")


# -- the stand-ins ------------------------------------------------------------------------------


def _cite_first(body: dict[str, Any]) -> str:
    ids = chunk_ids_in(user_text(body))
    return f"The orders query lacks an index on customer_id; add a composite index [chunk:{ids[0]}]."


def ollama_stand_in(models: list[str], reply: Callable[[dict], str] = _cite_first) -> Any:
    """Ollama: `GET /api/tags` lists `models`; `POST /api/chat` answers non-streamed."""
    return ollama_server(reply, models=models)


@contextmanager
def silent_listener() -> Iterator[dict[str, int]]:
    """A port that accepts connections and never answers (an Ollama that hangs)."""
    counts = {"connections": 0, "port": 0}
    held: list[socket.socket] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    counts["port"] = listener.getsockname()[1]

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            counts["connections"] += 1
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield counts
    finally:
        listener.close()
        for conn in held:
            conn.close()


def _free_port() -> int:
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- the context and how it is asked --------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_llm_configured(monkeypatch):
    """No key, host or base URL from the machine running the tests, and no remembered probe."""
    from chinvex.answer.generators import ollama

    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    ollama.forget_probes()
    yield
    ollama.forget_probes()


def _configured(lore, **answer):
    """The context with context.json `answer` set to `answer` (absent when empty), saved."""
    from chinvex.context.registry import Registry
    from chinvex.models import AnswerConfig

    config = lore["config"].model_copy(update={"answer": AnswerConfig(**answer) if answer else None})
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHINVEX_HOME", str(lore["home"]))
        Registry().save(config)
    return config


def _ask(lore, *flags: str, env: dict[str, str] | None = None):
    result = run_cli("answer", "--context", "lore", "--json", *flags, QUESTION,
                     env={"CHINVEX_HOME": str(lore["home"]), **(env or {})})
    assert_no_traceback(result)
    return result


def _warnings(config) -> list[str]:
    from chinvex.answer.generators import generator_warnings

    return generator_warnings(None, config)


# -- the default and the choice -----------------------------------------------------------------


def test_auto_is_the_default_of_context_json():
    from chinvex.answer.base import DEFAULT_GENERATOR
    from chinvex.models import AnswerConfig

    assert AnswerConfig().generator == "auto" and DEFAULT_GENERATOR == "auto"


def test_auto_with_a_reachable_ollama_that_lists_the_model_answers_through_it(lore):
    with ollama_stand_in(["qwen2.5:0.5b"]) as server:
        _configured(lore, model="qwen2.5:0.5b", host=server.url)
        result = _ask(lore)
    assert result.code == 0, result
    doc = result.json
    assert doc["grounded"] is True, doc["errors"]
    assert doc["retrieval"]["generator"] == "ollama" and doc["retrieval"]["model"] == "qwen2.5:0.5b"
    assert [c["chunk_id"] for c in doc["citations"]] == [doc["evidence_pack"]["chunks"][0]["chunk_id"]]
    assert "composite index" in doc["answer"]
    # one probe for the whole process (the CLI and the service both ask which generator), then the answer
    assert server.paths == ["GET /api/tags", "POST /api/chat"]
    assert server.requests[1]["model"] == "qwen2.5:0.5b" and server.requests[1]["stream"] is False


def test_an_answer_auto_got_from_ollama_passes_the_same_gate(lore):
    from chinvex.answer.service import answer

    with ollama_stand_in(["llama3.2:latest"], reply=lambda body: "Add an index on customer_id.") as server:
        config = _configured(lore, model="llama3.2", host=server.url)
        response = answer(config, QUESTION)
    assert response.retrieval.generator == "ollama"
    assert response.grounded is False and response.answer == "Not stated in retrieved sources."
    assert [e.code for e in response.errors] == ["GROUNDING_FAILED"] and "cites no chunk" in response.errors[0].detail


def test_auto_with_ollama_unreachable_answers_extractively_and_says_why(lore):
    url = f"http://127.0.0.1:{_free_port()}"
    config = _configured(lore, model="qwen2.5:0.5b", host=url)
    result = _ask(lore)
    doc = result.json
    assert doc["retrieval"]["generator"] == "extractive" and doc["retrieval"]["model"] is None
    assert not [e for e in doc["errors"] if e["code"] == "GENERATOR_ERROR"]
    (warning,) = _warnings(config)
    assert warning.startswith(f"auto: ollama not reachable at {url}") and warning.endswith("— extractive")


def test_auto_with_a_model_the_server_does_not_list_answers_extractively_and_says_why(lore):
    with ollama_stand_in(["llama3.2:latest"]) as server:
        config = _configured(lore, model="qwen2.5:0.5b", host=server.url)
        result = _ask(lore)
        assert server.paths == ["GET /api/tags"], "no evidence goes to a server without the model"
        (warning,) = _warnings(config)
    assert result.json["retrieval"]["generator"] == "extractive"
    assert "does not list model 'qwen2.5:0.5b'" in warning and "ollama pull qwen2.5:0.5b" in warning


def test_the_fallback_reason_is_a_warning_of_the_response(lore):
    url = f"http://127.0.0.1:{_free_port()}"
    _configured(lore, model="qwen2.5:0.5b", host=url)
    doc = _ask(lore).json
    assert any(w.startswith(f"auto: ollama not reachable at {url}") for w in doc["retrieval"]["warnings"])


def test_the_ollama_probe_is_quick_and_asked_once_per_process(lore):
    from chinvex.answer.generators import choose_generator, ollama

    with silent_listener() as hanging:
        config = _configured(lore, model="qwen2.5:0.5b", host=f"127.0.0.1:{hanging['port']}")
        started = time.monotonic()
        first = choose_generator(None, config)
        took = time.monotonic() - started
        again = choose_generator(None, config)
    assert first.name == "extractive" and first.fell_back and "timed out" in (first.why or "")
    assert took < ollama.PROBE_TIMEOUT_S + 1.0, "an answer never waits long on an Ollama that hangs"
    assert again == first and hanging["connections"] == 1


def test_auto_with_a_claude_model_and_its_key_answers_through_anthropic(lore):
    with anthropic_server(_cite_first) as claude, ollama_stand_in(["llama3.2:latest"]) as local:
        _configured(lore, model="claude-haiku-4-5")
        result = _ask(lore, env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": claude.url,
                                 "OLLAMA_HOST": local.url})
    assert result.code == 0, result
    doc = result.json
    assert doc["grounded"] is True and doc["retrieval"]["generator"] == "anthropic", doc["errors"]
    headers = claude.headers[0]
    assert len(claude.requests) == 1
    assert KEY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))
    assert local.connections == 0, "a Claude model configured: Ollama is not asked"


def test_a_key_in_the_environment_alone_sends_nothing_anywhere(lore):
    """chinvex is local-first: evidence leaves the machine only for a model the context names."""
    with anthropic_server(_cite_first) as claude, ollama_stand_in(["llama3.2:latest"]) as local:
        _configured(lore)
        result = _ask(lore, env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": claude.url,
                                 "OLLAMA_HOST": local.url})
    assert result.code == 0 and result.json["retrieval"]["generator"] == "extractive", result
    assert claude.requests == [] and local.connections == 0


def test_a_claude_model_is_anthropic_s_and_needs_its_key(lore, monkeypatch):
    from chinvex.answer.generators import choose_generator, make_generator

    config = _configured(lore, model="claude-haiku-4-5")
    without = choose_generator(None, config)
    assert without.name == "extractive" and "ANTHROPIC_API_KEY is not set" in (without.why or "")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert choose_generator(None, config).name == "anthropic"
    assert make_generator("auto", config).model == "claude-haiku-4-5"


def test_a_configured_local_model_is_never_sent_to_anthropic_instead(lore, monkeypatch):
    """A key in the environment does not move evidence meant for a local model to a cloud API."""
    from chinvex.answer.service import answer

    with anthropic_server(_cite_first) as claude:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", claude.url)
        config = _configured(lore, model="llama3.2", host=f"http://127.0.0.1:{_free_port()}")
        response = answer(config, QUESTION)
    assert response.retrieval.generator == "extractive" and claude.requests == []
    assert _warnings(config)[0].startswith("auto: ollama not reachable")


def test_no_configuration_answers_extractively_without_contacting_anything(lore):
    with ollama_stand_in(["llama3.2:latest"]) as local, ollama_stand_in([]) as remote:
        _configured(lore)
        result = _ask(lore, env={"OLLAMA_HOST": local.url, "ANTHROPIC_BASE_URL": remote.url})
    doc = result.json
    assert doc["retrieval"]["generator"] == "extractive" and doc["retrieval"]["model"] is None
    assert local.connections == 0 and remote.connections == 0
    assert not [w for w in doc["retrieval"]["warnings"] if w.startswith("auto:")]
    assert _warnings(lore["config"].model_copy(update={"answer": None})) == []


def test_the_generator_flag_still_chooses(lore):
    with ollama_stand_in(["qwen2.5:0.5b"]) as server:
        _configured(lore, model="qwen2.5:0.5b", host=server.url)
        extractive = _ask(lore, "--generator", "extractive")
        assert server.connections == 0, "a generator named outright is not probed for"
        auto = _ask(lore, "--generator", "auto")
    assert extractive.json["retrieval"]["generator"] == "extractive"
    assert auto.code == 0 and auto.json["retrieval"]["generator"] == "ollama", auto


def test_a_bad_generator_name_lists_auto_among_the_choices(lore):
    result = run_cli("answer", "--context", "lore", "--generator", "gpt", QUESTION,
                     env={"CHINVEX_HOME": str(lore["home"])})
    assert result.code == 2 and "extractive, anthropic, ollama, auto" in result.stderr, result
    assert_no_traceback(result)


# -- the pieces ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("host", "url"), [
    (None, "http://127.0.0.1:11434"),
    (":5000", "http://127.0.0.1:5000"),
    ("gpu-box", "http://gpu-box:11434"),
    ("http://gpu-box", "http://gpu-box:80"),
    ("https://gpu-box:8443/ollama/", "https://gpu-box:8443/ollama"),
    ("[::1]:8080", "http://[::1]:8080"),
])
def test_the_probe_asks_the_address_the_ollama_client_would(host, url):
    from chinvex.answer.generators import ollama

    assert ollama.server_url(host) == url
    ollama_client = pytest.importorskip("ollama._client")
    assert ollama_client._parse_host(host) == url


def test_an_untagged_model_is_its_latest_tag():
    from chinvex.answer.generators.ollama import Probe

    listed = Probe("http://127.0.0.1:1", ("llama3.2:latest", "hf.co/org/repo:Q4_K_M"))
    assert listed.serves("llama3.2") and listed.serves("llama3.2:latest")
    assert not listed.serves("llama3.2:1b") and listed.serves("hf.co/org/repo:Q4_K_M")
    assert not listed.serves("hf.co/org/repo")
