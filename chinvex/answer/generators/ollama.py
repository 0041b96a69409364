"""Answers written by a local model through the official `ollama` client (`/api/chat`).

Host: context.json `answer.host`, else `OLLAMA_HOST`, else the client's default
(http://127.0.0.1:11434). Model: context.json `answer.model`, else DEFAULT_MODEL. Temperature 0
so the same evidence gives the same answer as far as the model allows.

`probe` is how the `auto` choice (generators/__init__.py) asks whether that server runs and
which models it has, before any evidence is sent: one quick `GET /api/tags`, remembered.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from chinvex.answer.base import GenerationRequest, Generated, GeneratorError
from chinvex.answer.prompt import SYSTEM_PROMPT, user_prompt

DEFAULT_MODEL = "llama3.2"
TIMEOUT_S = 300.0
DEFAULT_PORT = 11434
PROBE_TIMEOUT_S = 0.5
"""A local Ollama answers /api/tags at once; one that does not within this is treated as absent,
so an answer never waits on a server that is not there."""
PROBE_TTL_S = 60.0
"""How long a probe's result is reused in this process: one command probes once, and a
long-running server (MCP, relay, web) still notices Ollama being started or stopped."""


class OllamaGenerator:
    name = "ollama"

    def __init__(self, model: str | None = None, host: str | None = None, timeout: float = TIMEOUT_S):
        self.model = model or DEFAULT_MODEL
        self.host = host
        self.timeout = timeout

    @classmethod
    def from_settings(cls, *, model: str | None, host: str | None) -> OllamaGenerator:
        return cls(model=model, host=host)

    def generate(self, request: GenerationRequest) -> Generated:
        try:
            import ollama
        except ImportError:
            raise GeneratorError(
                "the ollama generator needs the 'ollama' package (pip install 'chinvex[ollama]')"
            ) from None
        try:
            client = ollama.Client(host=self.host, timeout=self.timeout)
            response = client.chat(
                model=self.model,
                messages=[
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": user_prompt(request.query, request.evidence)},
                ],
                options={"temperature": 0},
            )
        except ollama.ResponseError as exc:
            hint = f" (try 'ollama pull {self.model}')" if exc.status_code == 404 else ""
            raise GeneratorError(f"Ollama error {exc.status_code}: {_short(exc.error)}{hint}") from None
        except ConnectionError as exc:
            raise GeneratorError(f"cannot reach Ollama at {self.host or 'OLLAMA_HOST/default'}: {_short(str(exc))}") from None
        except Exception as exc:  # httpx timeouts, malformed replies
            raise GeneratorError(f"Ollama request failed ({type(exc).__name__}: {_short(str(exc))})") from None
        message = getattr(response, "message", None)
        text = (getattr(message, "content", None) or "").strip()
        if not text:
            raise GeneratorError("the Ollama reply had no text")
        return Generated(text=text, model=getattr(response, "model", None) or self.model)


def configured_host(host: str | None) -> str | None:
    """context.json `answer.host`, else `OLLAMA_HOST`, else None (the client's default): the
    host the generator's client will talk to."""
    for candidate in (host, os.environ.get("OLLAMA_HOST")):
        if candidate and candidate.strip():
            return candidate.strip()
    return None


def server_url(host: str | None) -> str:
    """The base URL the official client derives from `host`: http and port 11434 unless the
    host says otherwise (a scheme without a port means that scheme's port), 127.0.0.1 when only
    a port is given. Raises ValueError for a host that is not one."""
    text = (host or "").strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "http", text
    if scheme not in ("http", "https"):
        raise ValueError(f"{host!r} is not an http(s) address")
    parts = urllib.parse.urlsplit(f"{scheme}://{rest}")
    name = parts.hostname or "127.0.0.1"
    port = parts.port or (DEFAULT_PORT if not sep else 443 if scheme == "https" else 80)
    name = f"[{name}]" if ":" in name else name
    return f"{scheme}://{name}:{port}{parts.path.rstrip('/')}"


@dataclass(frozen=True)
class Probe:
    """What `GET /api/tags` said: the models the server lists, or why there is no list."""

    url: str
    models: tuple[str, ...] | None
    problem: str | None = None

    def serves(self, model: str) -> bool:
        """Whether `model` is among the listed ones (an untagged name means its `:latest`)."""
        return _tagged(model) in {_tagged(name) for name in self.models or ()}


_probes: dict[str, tuple[float, Probe]] = {}
_probes_lock = threading.Lock()


def probe(url: str) -> Probe:
    """The models the Ollama server at `url` lists, asked once per PROBE_TTL_S in this process.
    Talks to `url` only, never through a proxy, and waits at most PROBE_TIMEOUT_S."""
    with _probes_lock:
        cached = _probes.get(url)
        if cached is not None and time.monotonic() - cached[0] < PROBE_TTL_S:
            return cached[1]
    found = _ask_tags(url)
    with _probes_lock:
        _probes[url] = (time.monotonic(), found)
    return found


def forget_probes() -> None:
    """Drop the remembered probes (tests; a server that wants to ask again at once)."""
    with _probes_lock:
        _probes.clear()


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is answered as the error it is here: the probe talks to the configured host only."""

    def redirect_request(self, *args, **kwargs) -> None:
        return None


def _ask_tags(url: str) -> Probe:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirects())
    request = urllib.request.Request(f"{url}/api/tags", headers={"Accept": "application/json"})
    try:
        with opener.open(request, timeout=PROBE_TIMEOUT_S) as reply:
            body = json.loads(reply.read(4 << 20) or b"{}")
    except urllib.error.HTTPError as exc:
        return Probe(url, None, f"GET /api/tags answered HTTP {exc.code}, not Ollama's model list")
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        return Probe(url, None, _short(str(reason) or type(reason).__name__, 120))
    except ValueError:
        return Probe(url, None, "GET /api/tags answered something other than Ollama's model list")
    listed = body.get("models") if isinstance(body, dict) else None
    if not isinstance(listed, list):
        return Probe(url, None, "GET /api/tags answered something other than Ollama's model list")
    names = [str(m.get("name") or m.get("model") or "") for m in listed if isinstance(m, dict)]
    return Probe(url, tuple(name for name in names if name))


def _tagged(model: str) -> str:
    """`llama3.2` -> `llama3.2:latest`, as Ollama itself resolves an untagged name."""
    model = model.strip()
    return model if ":" in model.rpartition("/")[2] else f"{model}:latest"


def _short(text: str, limit: int = 300) -> str:
    one = " ".join(str(text).split())
    return one if len(one) <= limit else one[: limit - 3] + "..."
