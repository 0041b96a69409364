"""The Ollama embedder through the real `ollama` Python client (and its httpx transport).

No real Ollama server can be installed here (it is a separate binary and its models are
downloads), so each test starts a loopback HTTP server (stdlib http.server on 127.0.0.1, port 0)
that speaks Ollama's documented wire format for POST /api/embed: request
`{"model": ..., "input": [...], ...}`, response `{"model": ..., "embeddings": [[...], ...]}`,
errors `{"error": "..."}` with the HTTP status code.
"""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest

from chinvex.embedding.factory import make_embedder
from chinvex.embedding.ollama import DEFAULT_HOST, DEFAULT_MODEL, OllamaEmbedder, resolve_host
from chinvex.errors import EmbedderError
from chinvex.models import EmbeddingConfig
from loopback_servers import EMBED_MODEL, Behaviour, FakeOllama, Reply, fake_vector, serve_embeddings

MODEL = EMBED_MODEL


@pytest.fixture
def fake_ollama():
    servers: list[FakeOllama] = []

    def start(behaviour: Behaviour | None = None) -> FakeOllama:
        server = FakeOllama(behaviour or serve_embeddings())
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture(autouse=True)
def _direct_connections(monkeypatch):
    """httpx honours proxy variables; a CI proxy must not see the loopback requests."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


class Sleeps(list):
    """Records the backoff delays instead of waiting them out."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def unit(vector: list[float]) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_batches_in_order_and_normalises(fake_ollama):
    server = fake_ollama()
    emb = OllamaEmbedder(MODEL, server.host, batch_size=2)
    texts = [f"text {i}" for i in range(5)]
    vectors = emb.embed_documents(texts)
    assert [r["input"] for r in server.requests] == [texts[0:2], texts[2:4], texts[4:5]]
    assert all(r["model"] == MODEL for r in server.requests)
    assert set(server.paths) == {("POST", "/api/embed")}
    assert emb.requests == 3
    assert vectors.shape == (5, 8) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    for i, text in enumerate(texts):
        np.testing.assert_allclose(vectors[i], unit(fake_vector(text, 8)), atol=1e-6)
    query = emb.embed_query("text 3")
    np.testing.assert_allclose(query, vectors[3], atol=1e-6)
    assert emb.dimension == 8
    assert emb.name == f"ollama:{MODEL}"


def test_retries_5xx_with_backoff_then_succeeds(fake_ollama):
    ok = serve_embeddings()

    def behaviour(n: int, body: dict) -> Reply:
        return (503, {"error": "server busy"}) if n <= 2 else ok(n, body)

    server = fake_ollama(behaviour)
    sleeps = Sleeps()
    emb = OllamaEmbedder(MODEL, server.host, backoff_s=0.25, max_attempts=4, sleep=sleeps)
    vectors = emb.embed_documents(["a", "b"])
    assert len(server.requests) == 3
    assert sleeps == [0.25, 0.5]
    np.testing.assert_allclose(vectors[1], unit(fake_vector("b", 8)), atol=1e-6)


def test_gives_up_after_bounded_attempts_on_5xx(fake_ollama):
    server = fake_ollama(lambda n, body: (500, {"error": "llama runner process has terminated"}))
    sleeps = Sleeps()
    emb = OllamaEmbedder(MODEL, server.host, max_attempts=3, backoff_s=0.1, sleep=sleeps)
    with pytest.raises(EmbedderError) as info:
        emb.embed_documents(["a"])
    assert len(server.requests) == 3
    assert sleeps == [0.1, 0.2]
    message = info.value.message
    assert "HTTP 500" in message and "llama runner process has terminated" in message
    assert "3 attempts" in message and server.host in message


def test_no_retry_on_400(fake_ollama):
    server = fake_ollama(lambda n, body: (400, {"error": "invalid input type"}))
    sleeps = Sleeps()
    emb = OllamaEmbedder(MODEL, server.host, sleep=sleeps)
    with pytest.raises(EmbedderError, match="HTTP 400: invalid input type"):
        emb.embed_documents(["a"])
    assert len(server.requests) == 1
    assert sleeps == []


def test_missing_model_says_pull_it(fake_ollama):
    server = fake_ollama()
    sleeps = Sleeps()
    emb = OllamaEmbedder("nomic-embed-text", server.host, sleep=sleeps)
    with pytest.raises(EmbedderError) as info:
        emb.embed_documents(["a"])
    assert "run `ollama pull nomic-embed-text`" in info.value.message
    assert server.host in info.value.message
    assert len(server.requests) == 1 and sleeps == []


def test_connection_refused_is_retried_then_explained():
    host = f"http://127.0.0.1:{closed_port()}"
    sleeps = Sleeps()
    emb = OllamaEmbedder(MODEL, host, max_attempts=3, backoff_s=0.05, sleep=sleeps)
    with pytest.raises(EmbedderError) as info:
        emb.embed_documents(["a"])
    message = info.value.message
    assert message.startswith(f"Ollama not reachable at {host}: start it with `ollama serve`")
    assert "\n" not in message
    assert emb.requests == 3 and sleeps == [0.05, 0.1]


def test_timeout_is_retried(fake_ollama):
    ok = serve_embeddings()

    def behaviour(n: int, body: dict) -> Reply:
        if n == 1:
            time.sleep(1.0)  # longer than the client's timeout
        return ok(n, body)

    server = fake_ollama(behaviour)
    sleeps = Sleeps()
    emb = OllamaEmbedder(MODEL, server.host, timeout_s=0.3, backoff_s=0.01, sleep=sleeps)
    vectors = emb.embed_documents(["slow"])
    assert vectors.shape == (1, 8)
    assert len(server.requests) == 2 and sleeps == [0.01]


def test_dimension_change_is_an_error(fake_ollama):
    def behaviour(n: int, body: dict) -> Reply:
        dim = 8 if n == 1 else 6
        return 200, {"model": MODEL, "embeddings": [fake_vector(t, dim) for t in body["input"]]}

    server = fake_ollama(behaviour)
    emb = OllamaEmbedder(MODEL, server.host, batch_size=2)
    with pytest.raises(EmbedderError, match="6-dimensional vectors after 8-dimensional"):
        emb.embed_documents(["a", "b", "c"])
    assert len(server.requests) == 2


def test_wrong_number_of_embeddings_is_an_error(fake_ollama):
    server = fake_ollama(lambda n, body: (200, {"model": MODEL, "embeddings": [[1.0, 2.0]]}))
    emb = OllamaEmbedder(MODEL, server.host)
    with pytest.raises(EmbedderError, match=r"1 embeddings of sizes \[2\] for 2 inputs"):
        emb.embed_documents(["a", "b"])


def test_ragged_embeddings_are_an_error(fake_ollama):
    server = fake_ollama(lambda n, body: (200, {"model": MODEL, "embeddings": [[1.0, 2.0], [1.0]]}))
    emb = OllamaEmbedder(MODEL, server.host)
    with pytest.raises(EmbedderError, match=r"sizes \[1, 2\]"):
        emb.embed_documents(["a", "b"])


def test_dimension_learnt_from_first_response(fake_ollama):
    server = fake_ollama(serve_embeddings(dim=12))
    emb = OllamaEmbedder(MODEL, server.host)
    assert emb.dimension == 12  # unknown model: one probe request
    assert len(server.requests) == 1
    assert emb.embed_documents([]).shape == (0, 12)
    assert len(server.requests) == 1  # an empty list sends nothing


def test_known_model_dimension_needs_no_request():
    emb = OllamaEmbedder(host=f"http://127.0.0.1:{closed_port()}")
    assert emb.model == DEFAULT_MODEL == "mxbai-embed-large"
    assert emb.dimension == 1024
    assert emb.embed_documents([]).shape == (0, 1024)
    assert emb.requests == 0


def test_host_resolution(monkeypatch):
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    assert resolve_host(None) == DEFAULT_HOST == "http://127.0.0.1:11434"
    monkeypatch.setenv("OLLAMA_HOST", "http://10.0.0.5:11434")
    assert resolve_host(None) == "http://10.0.0.5:11434"
    assert resolve_host("http://gpu-box:11434") == "http://gpu-box:11434"


def test_factory_ollama(fake_ollama, monkeypatch):
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    server = fake_ollama()
    config = EmbeddingConfig.model_validate(
        {"provider": "ollama", "model": MODEL, "host": server.host, "batch_size": 3}
    )
    emb = make_embedder(config)
    assert isinstance(emb, OllamaEmbedder)
    assert emb.name == f"ollama:{MODEL}" and emb.host == server.host and emb.batch_size == 3
    emb.embed_documents([str(i) for i in range(7)])
    assert [len(r["input"]) for r in server.requests] == [3, 3, 1]
    default = make_embedder(EmbeddingConfig(provider="ollama"))
    assert default.name == "ollama:mxbai-embed-large" and default.host == DEFAULT_HOST
    with pytest.raises(EmbedderError, match="embedding.batch_size"):
        make_embedder(EmbeddingConfig.model_validate({"provider": "ollama", "batch_size": 0}))


@pytest.mark.parametrize(
    ("model", "query_prefix", "document_prefix"),
    [
        ("mxbai-embed-large", "Represent this sentence for searching relevant passages: ", ""),
        ("nomic-embed-text:v1.5", "search_query: ", "search_document: "),
        (MODEL, "", ""),
    ],
)
def test_task_prefixes_of_retrieval_models(fake_ollama, model, query_prefix, document_prefix):
    server = fake_ollama(serve_embeddings(models=(model,)))
    emb = OllamaEmbedder(model, server.host)
    doc = emb.embed_documents(["the sky is blue"])[0]
    query = emb.embed_query("why is the sky blue?")
    assert [r["input"] for r in server.requests] == [
        [document_prefix + "the sky is blue"],
        [query_prefix + "why is the sky blue?"],
    ]
    np.testing.assert_allclose(doc, unit(fake_vector(document_prefix + "the sky is blue", 8)), atol=1e-6)
    np.testing.assert_allclose(query, unit(fake_vector(query_prefix + "why is the sky blue?", 8)), atol=1e-6)
