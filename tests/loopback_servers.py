"""Loopback stand-ins for the Anthropic Messages API and Ollama's chat and embeddings APIs.

The real services cannot be reached from the test machines (no network, no local models), so
the generators are exercised through their official SDKs against these servers, which speak
the documented wire formats: `POST /v1/messages` answering a Message object with content
blocks (https://docs.anthropic.com/en/api/messages), `POST /api/chat` answering a non-streamed
chat response and `GET /api/tags` listing models (https://github.com/ollama/ollama/blob/main/docs/api.md).
Each server records the requests it got and answers with whatever its `reply` callable returns.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], str]


def chunk_ids_in(prompt: str) -> list[str]:
    """The evidence chunk ids a generator put into its prompt (`<chunk id="...">`)."""
    return re.findall(r'<chunk id="([^"]+)"', prompt)


Route = Callable[[dict[str, Any], dict[str, str]], tuple[int, dict[str, Any]]]


class _Counting(ThreadingHTTPServer):
    """Counts every connection it accepts, so a test can say that nothing was contacted."""

    daemon_threads = True
    connections = 0

    def get_request(self):
        accepted = super().get_request()
        self.connections += 1
        return accepted


class _Server:
    """Answers `routes` ("/path" for a POST, or "METHOD /path") with (status, JSON); records each
    request's "METHOD /path", body and headers."""

    def __init__(self, routes: dict[str, Route]):
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server API)
                self._answer()

            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                self._answer()

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                path = self.path.split("?", 1)[0]
                outer.paths.append(f"{self.command} {path}")
                outer.requests.append(body)
                outer.headers.append(headers)
                route = routes.get(f"{self.command} {path}") or (routes.get(path) if self.command == "POST" else None)
                status, payload = route(body, headers) if route else (404, {"error": f"no route {self.path}"})
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = _Counting(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def connections(self) -> int:
        return self.httpd.connections

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def anthropic_server(reply: Reply, *, status: int = 200, model: str = "claude-test-model") -> _Server:
    """`POST /v1/messages` -> a Message with one text block (or an error object)."""

    def messages(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if status != 200:
            return status, {"type": "error", "error": {"type": "api_error", "message": "scripted failure"}}
        if not headers.get("x-api-key") and not headers.get("authorization"):
            return 401, {"type": "error", "error": {"type": "authentication_error", "message": "missing key"}}
        text = reply(body)
        return 200, {
            "id": "msg_loopback_01", "type": "message", "role": "assistant", "model": body.get("model", model),
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20},
        }

    return _Server({"/v1/messages": messages})


def ollama_server(reply: Reply, *, status: int = 200, models: list[str] | None = None) -> _Server:
    """`POST /api/chat` -> a non-streamed chat response (or Ollama's `{"error": ...}`); with
    `models`, also `GET /api/tags` listing them as pulled models."""

    def chat(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if status != 200:
            return status, {"error": f"model '{body.get('model')}' not found" if status == 404 else "scripted failure"}
        return 200, {
            "model": body.get("model"), "created_at": "2026-01-01T00:00:00.000000Z",
            "message": {"role": "assistant", "content": reply(body)},
            "done": True, "done_reason": "stop", "total_duration": 1000, "load_duration": 10,
            "prompt_eval_count": 100, "prompt_eval_duration": 100, "eval_count": 20, "eval_duration": 100,
        }

    routes: dict[str, Route] = {"/api/chat": chat}
    if models is not None:
        routes["GET /api/tags"] = lambda body, headers: (200, {"models": [_tag(m) for m in models]})
    return _Server(routes)


def _tag(name: str) -> dict[str, Any]:
    """One entry of `GET /api/tags`, as Ollama lists a pulled model."""
    return {"name": name, "model": name, "modified_at": "2026-01-01T00:00:00.000000Z", "size": 397821319,
            "digest": "a" * 64, "details": {"parent_model": "", "format": "gguf", "family": "qwen2",
                                            "families": ["qwen2"], "parameter_size": "494.03M",
                                            "quantization_level": "Q4_K_M"}}


def user_text(body: dict[str, Any]) -> str:
    """The user message of a Messages or chat request (string or content-block form)."""
    for message in body.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))
    return ""


# -- Ollama embeddings ---------------------------------------------------------------------------

EMBED_MODEL = "test-embed"
"""The model the Ollama embeddings stand-in serves by default."""


def fake_vector(text: str, dim: int) -> list[float]:
    """Deterministic, deliberately not unit length (the embedder must normalise)."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % 32] - 100) / 7.0 for i in range(dim)]


Reply = tuple[int, dict]
Behaviour = Callable[[int, dict], Reply]
"""(request number from 1, request body) -> (status, JSON body)."""


def serve_embeddings(dim: int = 8, models: tuple[str, ...] = (EMBED_MODEL,)) -> Behaviour:
    """POST /api/embed answered as Ollama does: `fake_vector` of each input, 404 for a model
    it does not have."""
    def behaviour(n: int, body: dict) -> Reply:
        if body.get("model") not in models:
            return 404, {"error": f'model "{body.get("model")}" not found, try pulling it first'}
        return 200, {
            "model": body["model"],
            "embeddings": [fake_vector(t, dim) for t in body["input"]],
            "total_duration": 1000,
            "load_duration": 10,
            "prompt_eval_count": len(body["input"]),
        }

    return behaviour


class FakeOllama:
    """A loopback Ollama embeddings server (POST /api/embed, Ollama's documented wire format);
    records every request body."""

    def __init__(self, behaviour: Behaviour):
        self.behaviour = behaviour
        self.requests: list[dict] = []
        self.paths: list[tuple[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                owner.paths.append((self.command, self.path))
                owner.requests.append(body)
                if self.path != "/api/embed":
                    status, reply = 404, {"error": "404 page not found"}
                else:
                    status, reply = owner.behaviour(len(owner.requests), body)
                data = json.dumps(reply).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json; charset=utf-8")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.host = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
