"""The JSON-RPC client against a fake server: handshake, matching, failures, timeouts."""

from __future__ import annotations

import sys
import time
import pytest
from chinvex_adapters.cx_appserver import schemas as s
from chinvex_adapters.cx_appserver.client import AppServerClient
from chinvex_adapters.cx_appserver.errors import (
    AppServerDied,
    AppServerError,
    AppServerTimeout,
    AppServerUnavailable,
)
from chinvex_adapters.cx_appserver.launch import ClientConfig
from chinvex_adapters.cx_appserver.threads import ThreadReadError
from replay_support import (
    CODEMIE,
    DYING_CHILD,
    FakeAppServer,
    LARGE_0106,
    LOCALPUSH_MID,
    LOCALPUSH_SHORT,
    NOISY_CHILD,
    PAGINATED,
    UNKNOWN_ID,
    add_history_routes,
    recorded,
    reply,
    source_over,
)


def test_handshake_sends_chinvex_client_info_then_initialized(make_client):
    fake = FakeAppServer(runs=("run1",))
    init = recorded("run1", "initialize")
    fake.route("initialize", lambda p: True, reply(init))
    client = make_client(fake)

    assert client.initialize_result == init.response["result"]
    s.InitializeResponse.model_validate(client.initialize_result)
    sent = fake.received[0]
    assert sent["method"] == "initialize" and isinstance(sent["id"], int)
    assert sent["params"]["clientInfo"]["name"] == "chinvex"
    from chinvex import __version__

    assert sent["params"]["clientInfo"]["version"] == __version__
    assert sent["params"]["capabilities"] is None  # only stable methods/fields are used
    deadline = time.time() + 2
    while len(fake.received) < 2 and time.time() < deadline:
        time.sleep(0.01)
    assert fake.received[1] == {"method": "initialized"}
    assert "jsonrpc" not in sent


def test_request_before_initialize_is_refused(make_client):
    fake = FakeAppServer(runs=("run3b",))
    client = make_client(fake, handshake=False)
    with pytest.raises(AppServerError) as info:
        client.request("thread/list", {"modelProviders": []})
    assert info.value.code == -32600 and info.value.message == "Not initialized"
    assert info.value.method == "thread/list"


def test_second_initialize_is_reported_as_unavailable(make_client):
    fake = FakeAppServer(runs=("run3b",))
    client = make_client(fake)
    with pytest.raises(AppServerUnavailable, match="Already initialized"):
        client.initialize()


def test_out_of_order_responses_are_matched_by_id(make_client):
    fake = FakeAppServer(runs=("run3",))
    add_history_routes(fake)
    client = make_client(fake)
    fake.swap_pairs = True  # from now on, every two answers are sent in reverse order
    first = client.send_request("thread/read", {"threadId": LOCALPUSH_SHORT, "includeTurns": True})
    second = client.send_request("thread/read", {"threadId": CODEMIE, "includeTurns": True})
    assert client.wait(second, "thread/read")["thread"]["id"] == CODEMIE
    assert client.wait(first, "thread/read")["thread"]["id"] == LOCALPUSH_SHORT
    ids = [m["id"] for m in fake.received if m.get("method") == "thread/read"]
    assert ids == [first.request_id, second.request_id] and ids[0] != ids[1]


def test_notifications_and_non_json_lines_are_ignored(make_client):
    fake = FakeAppServer(runs=("run1",))
    add_history_routes(fake)
    seen: list[str] = []
    client = AppServerClient(ClientConfig(request_timeout_s=5), transport=fake.transport(),
                             on_notification=lambda method, params: seen.append(method))
    client.start()
    try:
        fake.send_raw(b"this is not json\n")
        # thread/read with includeTurns on a paginated thread is preceded by a recorded
        # deprecationNotice notification.
        result = client.request("thread/read", {"threadId": PAGINATED, "includeTurns": True})
        assert len(result["thread"]["turns"]) == 5
        assert "deprecationNotice" in seen
        assert client.ignored_lines == 1
    finally:
        client.close()


def test_server_requests_are_answered_with_an_error(make_client):
    fake = FakeAppServer(runs=("run3b",))
    client = make_client(fake)
    fake.send({"id": 99, "method": "item/tool/requestUserInput", "params": {"threadId": "t"}})
    deadline = time.time() + 2
    while not any(m.get("id") == 99 for m in fake.received) and time.time() < deadline:
        time.sleep(0.01)
    answer = [m for m in fake.received if m.get("id") == 99]
    assert answer and answer[0]["error"]["code"] == -32601
    assert client.server_requests_refused == 1


def test_unknown_thread_id_is_a_per_thread_error():
    fake = FakeAppServer(runs=("run3",))
    add_history_routes(fake)
    with source_over(fake) as source:
        with pytest.raises(ThreadReadError, match="thread not loaded") as info:
            source.read_thread(UNKNOWN_ID)
        assert info.value.outcome.reason == "server_error"
        # the source and its client are still usable afterwards
        assert source.read_thread(LARGE_0106) is not None


def test_eof_fails_every_pending_request_at_once(make_client):
    fake = FakeAppServer(runs=("run3",))
    fake.ignore_methods = {"thread/loaded/list"}
    fake.die_on = {"thread/list"}
    client = make_client(fake, timeout=30)
    pending = client.send_request("thread/loaded/list", {})
    started = time.monotonic()
    with pytest.raises(AppServerDied, match="end of file"):
        client.request("thread/list", {"modelProviders": []})
    with pytest.raises(AppServerDied, match="thread/loaded/list"):
        client.wait(pending, "thread/loaded/list")
    assert time.monotonic() - started < 5  # nobody waited for the 30 s timeout
    with pytest.raises(AppServerDied):
        client.request("thread/list", {})  # a dead client says so immediately


def test_dead_child_error_names_exit_code_and_stderr(tmp_path):
    script = tmp_path / "dying_child.py"
    script.write_text(DYING_CHILD)
    home = tmp_path / ".codex"
    home.mkdir()
    config = ClientConfig(command=[sys.executable, str(script)], codex_home=str(home), offline=False)
    with AppServerClient(config) as client:
        pending = client.send_request("thread/loaded/list", {})
        with pytest.raises(AppServerDied) as info:
            client.request("thread/list", {"modelProviders": []})
        message = str(info.value)
        assert "exited with code 7" in message and "disk on fire" in message
        with pytest.raises(AppServerDied, match="exited with code 7"):
            client.wait(pending, "thread/loaded/list")


def test_stderr_is_drained_so_a_chatty_child_never_blocks(tmp_path):
    script = tmp_path / "noisy_child.py"
    script.write_text(NOISY_CHILD)
    home = tmp_path / ".codex"
    home.mkdir()
    config = ClientConfig(command=[sys.executable, str(script)], codex_home=str(home), offline=False,
                          request_timeout_s=20, stderr_lines=50)
    with AppServerClient(config) as client:
        assert client.request("thread/list", {}) == {"userAgent": "noisy/0.169.0"}
        deadline = time.time() + 5
        while not client.stderr_tail(1)[-1].startswith("WARN noisy log line 04999") and time.time() < deadline:
            time.sleep(0.01)  # the drain thread may still be catching up
        tail = client.stderr_tail(100)
        assert len(tail) == 50 and tail[-1].startswith("WARN noisy log line 04999")


def test_child_failing_at_start_is_unavailable(tmp_path):
    script = tmp_path / "bad_start.py"
    script.write_text("import sys; sys.stderr.write('Error: config.toml is broken\\n'); sys.exit(1)\n")
    home = tmp_path / ".codex"
    home.mkdir()
    config = ClientConfig(command=[sys.executable, str(script)], codex_home=str(home), offline=False)
    with pytest.raises(AppServerUnavailable, match=r"(?s)exited with code 1.*config.toml is broken"):
        with AppServerClient(config):
            pass


def test_start_failures_are_clear(tmp_path):
    with pytest.raises(AppServerUnavailable, match="not on PATH"):
        AppServerClient(ClientConfig(command=["codex-does-not-exist-xyz", "app-server"])).start()
    with pytest.raises(AppServerUnavailable, match="not found at"):
        AppServerClient(ClientConfig(binary=str(tmp_path / "nope" / "codex"))).start()
    missing_home = tmp_path / "no-such-codex-home"
    with pytest.raises(AppServerUnavailable, match="CODEX_HOME .* does not exist"):
        AppServerClient(ClientConfig(command=[sys.executable], codex_home=str(missing_home))).start()


def test_command_line_from_context_config(tmp_path):
    from chinvex.models import CodexAppServerConfig
    from chinvex_adapters.cx_appserver.launch import build_argv
    from chinvex_adapters.cx_appserver.source import client_factory_from

    cfg = CodexAppServerConfig(command=["codex", "app-server", "--listen", "stdio://"], timeout_s=7)
    client = client_factory_from(cfg, codex_home=str(tmp_path), binary=sys.executable)()
    assert client.config.request_timeout_s == 7 and client.config.codex_home == str(tmp_path)
    argv = build_argv(client.config)
    # the resolved binary replaces "codex"; plugin sync (github.com) is switched off
    assert argv == [sys.executable, "app-server", "--listen", "stdio://", "-c", "features.plugins=false"]
    offline_off = CodexAppServerConfig(offline=False)  # an extra key of context.json
    assert "-c" not in build_argv(client_factory_from(offline_off, binary=sys.executable)().config)


def test_timeout_is_reported_and_client_stays_usable(make_client):
    fake = FakeAppServer(runs=("run3b",))
    add_history_routes(fake)
    fake.ignore_methods = {"thread/loaded/list"}
    client = make_client(fake)
    started = time.monotonic()
    with pytest.raises(AppServerTimeout, match=r"thread/loaded/list got no answer within 0.2 s"):
        client.request("thread/loaded/list", {}, timeout=0.2)
    assert time.monotonic() - started < 2
    result = client.request("thread/read", {"threadId": LOCALPUSH_MID, "includeTurns": True})
    assert result["thread"]["id"] == LOCALPUSH_MID
