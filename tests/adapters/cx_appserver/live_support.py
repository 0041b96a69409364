"""cx_appserver against the real `codex app-server` 0.169.0 (offline, unauthenticated).

Binary: $CHINVEX_CODEX_BIN, else the cache of scripts/install-codex.sh
($CHINVEX_CODEX_CACHE or .cache/codex-0.169.0), else `codex` on PATH. The tests skip only
when no binary exists and npm is unavailable to install one; with npm present a missing
binary is a failure that says to run the install script.

The Codex home is a temp dir seeded with the rollouts of fixtures/codex-rollout. What 0.169.0
lists there (verified, FORMATS.md §1.5 / §2.1):
- the three 0.104 localpush rollouts, the 0.128 codemie rollout and the generated 0.169.0
  legacy rollout: listed (envelope-era files) and readable through thread/read;
- the generated 0.169.0 paginated rollout: listed, but its turns live in the server's SQLite
  projection, which a copied file does not have → no turns → `read_thread` returns None
  with reason `paginated_projection_missing` (the JSONL adapter reads it instead);
- the `.jsonl.zst` copy of the legacy rollout sits next to its plain twin: the plain file
  wins, so it adds no thread;
- `truncated-last-line.jsonl` is that same legacy thread cut mid-line; it gets a rollout name
  and a thread id of its own (rewritten in the copy) so it lists as a 7th thread, whose last
  turn reads back "interrupted".
A second home holds the `.zst` plus an unrenamed copy of the truncated file in another day
folder: one thread id in two files, which 0.169.0 lists twice by default (no sourceKinds) and
once with an explicit sourceKinds filter.

A paginated thread *with* a server projection cannot be copied in (the projection lives in the
server's thread_history_1.sqlite), so `record_paginated_thread` has the real server write one:
`thread/start`, two `turn/start`s answered by a loopback stand-in for the Responses API (the way
fixtures/codex-rollout/generated-0.169.0 was made, FORMATS.md §1.6: no network, no account),
then a `thread/shellCommand` turn. What was tried first, without any model: `thread/shellCommand`
alone gives a projected paginated turn, but a thread without a user message is not listed by
`thread/list`; `thread/inject_items` appends raw response items and creates no turn; `thread/fork`
of a legacy thread gives a legacy thread.


What the live tests (and the ingest tests) share: the scripted Responses API, recorded threads, the
helpers that compare turns.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from chinvex.models import CodexAppServerConfig
from chinvex_adapters.cx_appserver.client import AppServerClient
from chinvex_adapters.cx_appserver.launch import ClientConfig
from chinvex_adapters.cx_appserver.source import AppServerSource, client_factory_from
from helpers import CODEX_INSTALL_SCRIPT, CODEX_TRIPLE, CODEX_VERSION, FIXTURES

ROLLOUTS = FIXTURES / "codex-rollout"


INSTALL_SCRIPT, VERSION, TRIPLE = CODEX_INSTALL_SCRIPT, CODEX_VERSION, CODEX_TRIPLE


LEGACY_ID = "01a20116-7f80-7e82-8754-e5125007d434"


TRUNCATED_ID = "01a20116-7f80-7e82-8754-00000000aaaa"  # the truncated copy's own id


PAGINATED_ID = "01a20116-364e-7ac1-8d5a-b68a4dbbf7c6"


LEGACY_NAME = f"rollout-2026-11-22T02-29-41-{LEGACY_ID}.jsonl"


# Per-role turn counts of each listed thread as 0.169.0 replays it (reasoning summaries are
# assistant turns). Legacy replays carry no tool calls: see the module report.
EXPECTED_ROLES = {
    "019c8a4d-8f45-7010-8b5d-7fad920aa6f9": {"user": 1, "assistant": 34},  # 17 reasoning + 17 agent
    "019c8a70-dda7-7f33-98ea-f30553347322": {"user": 1, "assistant": 2},
    "019c8bfe-ec25-79e0-97d7-bda6a9c575ff": {"user": 1, "assistant": 12},
    "019e1695-0522-7c83-8b39-0dd379793f80": {"user": 3},
    LEGACY_ID: {"user": 2, "assistant": 4},
    TRUNCATED_ID: {"user": 2, "assistant": 4},
}


EXPECTED_CODEX_TURNS = {
    "019c8a4d-8f45-7010-8b5d-7fad920aa6f9": 1,
    "019c8a70-dda7-7f33-98ea-f30553347322": 1,
    "019c8bfe-ec25-79e0-97d7-bda6a9c575ff": 1,
    "019e1695-0522-7c83-8b39-0dd379793f80": 3,
    LEGACY_ID: 2,
    TRUNCATED_ID: 2,
}


def _copy(src: Path, dest: Path, replace: tuple[bytes, bytes] | None = None) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    data = src.read_bytes()
    if replace:
        data = data.replace(*replace)
    dest.write_bytes(data)


def _config(binary: str, home: Path, **kw) -> ClientConfig:
    return ClientConfig(binary=binary, codex_home=str(home), request_timeout_s=20, startup_timeout_s=20, **kw)


def _source(binary: str, home: Path) -> AppServerSource:
    # How the pipeline builds it: from context.json's codex_appserver block.
    factory = client_factory_from(CodexAppServerConfig(timeout_s=20), codex_home=str(home), binary=binary)
    return AppServerSource(factory)


def _digests(home: Path) -> dict[str, str]:
    return {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in (home / "sessions").rglob("*") if p.is_file()}


class ScriptedResponsesAPI:
    """A loopback stand-in for the Responses API behind `turn/start`: the N-th POST to
    `/v1/responses` streams one reasoning item and one assistant message (both with ids, which
    paginated threads require, FORMATS.md §1.6). It stands in for the *model*, not for the
    app-server: the server under test is the real binary, which writes the rollout and its own
    SQLite projection exactly as it does for a real session."""

    def __init__(self, answers: Sequence[tuple[str, str]]):
        self.answers = list(answers)  # (reasoning summary, assistant text) per model call
        self.requests: list[str] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                api.requests.append(self.path)
                calls = sum(1 for path in api.requests if path.endswith("/responses"))
                if not self.path.endswith("/responses") or calls > len(api.answers):
                    self.send_response(404)
                    self.end_headers()
                    return
                body = api.stream(calls)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802
                api.requests.append(self.path)
                self.send_response(404)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def stream(self, n: int) -> bytes:
        reasoning, answer = self.answers[n - 1]
        events = [
            {"type": "response.created", "response": {"id": f"resp_{n}"}},
            {"type": "response.output_item.done",
             "item": {"type": "reasoning", "id": f"rs_{n}", "content": None, "encrypted_content": None,
                      "summary": [{"type": "summary_text", "text": reasoning}]}},
            {"type": "response.output_item.done",
             "item": {"type": "message", "role": "assistant", "id": f"msg_{n}",
                      "content": [{"type": "output_text", "text": answer}]}},
            {"type": "response.completed",
             "response": {"id": f"resp_{n}", "usage": {"input_tokens": 10, "input_tokens_details": None,
                                                       "output_tokens": 5, "output_tokens_details": None,
                                                       "total_tokens": 15}}},
        ]
        return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "ScriptedResponsesAPI":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@dataclass
class RecordedThread:
    """What `record_paginated_thread` asked the server to write, to check readers against."""

    thread_id: str
    rollout_path: Path
    turn_ids: list[str]
    prompts: list[str]
    answers: list[tuple[str, str]]
    shell_output: str
    notifications: list[str] = field(default_factory=list)


MOCK_CONFIG = """\
model = "mock-model"
approval_policy = "never"
sandbox_mode = "read-only"
model_provider = "mock_provider"

[features]
remote_models = false

[model_providers.mock_provider]
name = "Loopback stand-in for the Responses API"
base_url = "{base_url}"
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0
"""


def record_paginated_thread(binary: str, home: Path, *, tag: str = "live") -> RecordedThread:
    """Have the real `codex app-server` write a paginated thread into `home` (created if
    missing): two user turns answered by `ScriptedResponsesAPI`, then a user shell command
    (`thread/shellCommand`, no model). The server keeps the thread's projection in its own
    thread_history_1.sqlite, so `thread/turns/list` and `thread/items/list` have content —
    unlike a copied paginated rollout. The temporary config.toml is removed afterwards, so
    whoever reads the home next starts the server with its defaults."""
    home.mkdir(parents=True, exist_ok=True)
    prompts = [f"{tag}: what does the paginated reader return?", f"{tag}: and for a second turn?"]
    answers = [(f"**Planning {tag} 1**\n\nLook at the projection.", f"{tag} answer one: turns come from SQLite."),
               (f"**Planning {tag} 2**", f"{tag} answer two: items are listed per turn.")]
    shell_output = f"{tag}-shell-output"
    completed: list[dict[str, Any]] = []
    seen: list[str] = []
    done = threading.Condition()

    def on_notification(method: str, params: Any) -> None:
        with done:
            seen.append(method)
            if method == "turn/completed":
                completed.append(params)
                done.notify_all()

    def wait_for_turn(count: int) -> dict[str, Any]:
        with done:
            if not done.wait_for(lambda: len(completed) >= count, timeout=60):
                raise AssertionError(f"turn {count} did not complete; notifications: {seen[-20:]}")
            return completed[count - 1]

    config = home / "config.toml"
    with ScriptedResponsesAPI(answers) as api:
        config.write_text(MOCK_CONFIG.format(base_url=api.base_url))
        try:
            client = AppServerClient(ClientConfig(binary=binary, codex_home=str(home), request_timeout_s=60,
                                                  startup_timeout_s=60, extra_env={"MOCK_API_KEY": "test"}),
                                     on_notification=on_notification)
            with client:
                thread = client.request("thread/start", {"cwd": str(home)})["thread"]
                assert thread["historyMode"] == "paginated", thread
                for number, prompt in enumerate(prompts, start=1):
                    client.request("turn/start", {"threadId": thread["id"], "input": [
                        {"type": "text", "text": prompt, "text_elements": []}]})
                    turn = wait_for_turn(number)["turn"]
                    assert turn["status"] == "completed", turn
                client.request("thread/shellCommand", {"threadId": thread["id"], "timeoutMs": 30_000,
                                                       "command": f"echo {shell_output}"})
                wait_for_turn(len(prompts) + 1)
        finally:
            config.unlink(missing_ok=True)
    assert sum(1 for path in api.requests if path.endswith("/responses")) == len(prompts)
    turn_ids = [params["turn"]["id"] for params in completed]
    assert all(params["turn"]["status"] == "completed" for params in completed), completed
    return RecordedThread(thread_id=thread["id"], rollout_path=Path(thread["path"]), turn_ids=turn_ids,
                          prompts=prompts, answers=answers, shell_output=shell_output, notifications=seen)


def squash_ws(text: str) -> str:
    """Text compared modulo whitespace: the readers join multi-part texts differently (the
    server joins reasoning summary parts with blank lines)."""
    return re.sub(r"\s+", " ", text).strip()


def turn_kind(turn: Any) -> str:
    """user | assistant | reasoning | tool | <role>:<kind> — the two adapters agree on these
    (the rollout adapter leaves `meta.kind` unset on user turns, the server's copy says
    "message")."""
    kind = turn.meta.get("kind")
    if turn.role == "assistant" and kind == "reasoning":
        return "reasoning"
    if turn.role in ("user", "tool") or (turn.role == "assistant" and kind in (None, "message")):
        return turn.role
    return f"{turn.role}:{kind}"
