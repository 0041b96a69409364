"""Issue 3: the same ingest against a real `chroma run` server, and with the Ollama provider
(through the real `ollama` client against a loopback server — no real Ollama server can be
installed here, so the loopback server speaks its documented /api/embed JSON)."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from helpers import assert_no_traceback, run_cli, run_cli_in_process


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _set(home: Path, context: str, **updates) -> None:
    path = home / "contexts" / context / "context.json"
    data = json.loads(path.read_text())
    for dotted, value in updates.items():
        target = data
        keys = dotted.split("__")
        for key in keys[:-1]:
            target = target.setdefault(key, {})
        target[keys[-1]] = value
    path.write_text(json.dumps(data))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "server.py").write_text(
        "def start_server(port):\n    '''Bind the socket and serve requests forever.'''\n    return port\n")
    (root / "notes.md").write_text("# Deploy\n\nDeployments go through the blue-green switch.\n")
    return root


@pytest.fixture
def chroma_server(tmp_path: Path):
    port = _free_port()
    log = open(tmp_path / "chroma.log", "wb")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "chroma"), "run", "--path", str(tmp_path / "chroma-srv"),
         "--host", "127.0.0.1", "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(url + "/api/v2/heartbeat", timeout=1).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                log.close()
                pytest.fail(f"chroma run did not start: {(tmp_path / 'chroma.log').read_text()[-2000:]}")
            time.sleep(0.2)
    yield url, proc.pid
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    log.close()


def test_ingest_into_a_chroma_server(chinvex_home: Path, repo: Path, chroma_server):
    import chromadb
    from chromadb.config import Settings

    url, pid = chroma_server
    assert run_cli_in_process("context", "create", "Srv", "--repo", str(repo)).code == 0
    _set(chinvex_home, "Srv", index__chroma_url=url)
    result = run_cli_in_process("ingest", "--context", "Srv", "--json")
    assert result.code == 0, result
    assert not (chinvex_home / "indexes" / "Srv" / "chroma" / "chroma.sqlite3").exists()
    with sqlite3.connect(chinvex_home / "indexes" / "Srv" / "hybrid.db") as conn:
        name = conn.execute("SELECT value FROM meta WHERE key='chroma_collection'").fetchone()[0]
        chunk_ids = {r[0] for r in conn.execute("SELECT chunk_id FROM chunks")}
    client = chromadb.HttpClient(host="127.0.0.1", port=int(url.rsplit(":", 1)[1]),
                                 settings=Settings(anonymized_telemetry=False))
    got = client.get_collection(name).get(include=["embeddings", "metadatas"])
    assert set(got["ids"]) == chunk_ids and len(chunk_ids) >= 2
    assert all(len(v) == 384 for v in got["embeddings"])
    assert {m["source_type"] for m in got["metadatas"]} == {"repo"}
    found = run_cli("search", "--context", "Srv", "how is the server started", "--json").json
    assert found["stats"]["mode"] == "hybrid" and found["stats"]["warnings"] == []
    assert found["results"][0]["source_uri"].endswith("server.py")


def test_unreachable_chroma_server_is_a_clear_error(chinvex_home: Path, repo: Path):
    assert run_cli_in_process("context", "create", "Down", "--repo", str(repo)).code == 0
    _set(chinvex_home, "Down", index__chroma_url=f"http://127.0.0.1:{_free_port()}")
    result = run_cli_in_process("ingest", "--context", "Down", "--json")
    assert result.code == 1, result
    assert "Chroma" in result.json["error"]["message"]
    assert_no_traceback(result)


def test_ollama_provider_and_refusal_to_mix_models(chinvex_home: Path, repo: Path):
    from loopback_servers import FakeOllama, serve_embeddings

    server = FakeOllama(serve_embeddings(dim=16, models=("mxbai-embed-large",)))
    try:
        assert run_cli_in_process("context", "create", "Oll", "--repo", str(repo)).code == 0
        _set(chinvex_home, "Oll", embedding={"provider": "ollama", "host": server.host})
        first = run_cli_in_process("ingest", "--context", "Oll", "--json")
        assert first.code == 0, first
        assert first.json["embedder"] == "ollama:mxbai-embed-large"
        assert first.json["chunks"]["embedded"] >= 2
        assert server.requests, "the real ollama client reached the loopback server"
        stats = run_cli_in_process("stats", "--context", "Oll", "--json").json
        assert stats["embedder"]["embedding_dimension"] == "16"
    finally:
        server.close()
    # The embedder is now unavailable (its server is gone): search still answers, from FTS
    # alone, and says so instead of pretending to be hybrid.
    down = run_cli("search", "--context", "Oll", "server", "--json")
    assert down.code == 0, down
    assert down.json["stats"]["mode"] == "fts" and down.json["results"], down.json["stats"]
    assert any("vector search failed" in w and "FTS only" in w for w in down.json["stats"]["warnings"])
    # Back to the built-in model: mixing 16-d and 384-d vectors must be refused.
    _set(chinvex_home, "Oll", embedding={"provider": "builtin"})
    (repo / "server.py").write_text("def start_server(port):\n    return port + 1\n")
    refused = run_cli_in_process("ingest", "--context", "Oll", "--json")
    assert refused.code == 1
    assert refused.json["error"]["code"] == "EMBEDDER_MISMATCH"
    assert "--full" in refused.json["error"]["message"]
    searched = run_cli("search", "--context", "Oll", "server", "--json").json
    assert searched["stats"]["mode"] == "fts" and "ingest --full" in searched["stats"]["warnings"][0]
    full = run_cli_in_process("ingest", "--context", "Oll", "--full", "--json")
    assert full.code == 0, full
    assert full.json["embedder"].startswith("builtin:")
    assert run_cli("search", "--context", "Oll", "server", "--json").json["stats"]["mode"] == "hybrid"
