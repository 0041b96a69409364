"""`chinvex search`, `answer` and `pack` reach a running chinvex process through the user's relay
socket (issue 41): the same output as in-process, served by the warm engine, declined (and then
computed in-process) when the caller's chinvex settings differ; the socket is private and a
leftover of a dead process is replaced. The server runs in this test process with a real Engine
over a real ingest; the CLI is the real command in a subprocess."""

from __future__ import annotations

import os
import re
import socket
import stat
from pathlib import Path

import pytest

from chinvex.api import Engine
from chinvex.relay.address import socket_path
from chinvex.relay.handlers import handlers
from chinvex.relay.server import RelayServer
from helpers import indexed_notes, run_cli

NOTES = {"retry.md": "# Webhook retries\n\nWebhooks are retried with exponential backoff: 1 s, 2 s, 4 s.\n",
         "ledger.md": "# Ledger\n\nThe ledger is reconciled nightly at 02:00 UTC by the settle job.\n"}


@pytest.fixture()
def relay(tmp_path: Path, chinvex_home: Path):
    indexed_notes(tmp_path / "notes", "relayctx", NOTES)
    engine = Engine(server=True)
    served: list[str] = []

    def counted(name, handler):
        def call(args):
            served.append(name)
            return handler(args)
        return call

    server = RelayServer({name: counted(name, h) for name, h in handlers(lambda: engine).items()})
    assert server.start()
    yield server, served
    server.close()
    engine.close()


TIMING = re.compile(r"\b\d+(\.\d+)? (ms|s)\b")


def _without_timing(text: str) -> str:
    """The output without the lines that say how long the command took (`555 ms`, or `2.0 s`
    on a loaded machine), which differ between any two runs."""
    return "\n".join(line for line in text.splitlines()
                     if not TIMING.search(line) and "took_ms" not in line)


@pytest.mark.parametrize("args", [
    ("search", "--context", "relayctx", "webhook backoff", "--k", "3"),
    ("search", "--context", "relayctx", "ledger", "--json"),
    ("answer", "--context", "relayctx", "When is the ledger reconciled?"),
    ("pack", "--context", "relayctx", "webhook retries", "--budget-tokens", "300"),
])
def test_relayed_output_is_the_in_process_output(relay, args):
    _, served = relay
    relayed = run_cli(*args)
    assert served == [args[0]], served  # the running process answered
    local = run_cli(*args, env={"CHINVEX_NO_RELAY": "1"})
    assert served == [args[0]]  # and the opted-out call did not ask it
    assert relayed.code == local.code == 0, (relayed, local)
    if "--json" in args:
        relayed_json, local_json = relayed.json, local.json
        relayed_json["stats"].pop("took_ms"), local_json["stats"].pop("took_ms")
        assert relayed_json == local_json
    else:
        assert _without_timing(relayed.stdout) == _without_timing(local.stdout)


def test_other_settings_are_declined_and_computed_here(relay):
    _, served = relay
    result = run_cli("search", "--context", "relayctx", "webhook", "--json", env={"CHINVEX_EMBED_THREADS": "1"})
    assert result.code == 0 and result.json["results"], result
    assert served == []


def test_the_socket_is_private_and_a_dead_ones_socket_is_replaced(relay):
    server, _ = relay
    path = socket_path()
    assert path is not None and path == server.path
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    server.close()
    assert not path.exists()
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(path))  # bound by a process that died without removing it
    leftover.close()
    assert path.exists()
    again = RelayServer({})
    try:
        assert again.start()
        assert not RelayServer({}).start()  # a live one is never replaced
    finally:
        again.close()


def test_no_server_means_in_process(tmp_path: Path, chinvex_home: Path):
    indexed_notes(tmp_path / "notes", "relayctx", NOTES)
    path = socket_path()
    assert path is not None and not path.exists()
    result = run_cli("search", "--context", "relayctx", "ledger", "--json")
    assert result.code == 0 and result.json["results"][0]["source_uri"].endswith("ledger.md")
    assert os.environ["CHINVEX_HOME"] == str(chinvex_home)


def test_start_up_switches_do_not_decline_the_relay():
    """Settings that only change how this process starts (the cold start, the kept model graph)
    do not change an answer, so the relay may still give it."""
    from chinvex.relay.address import settings

    assert settings({"CHINVEX_COLD_START": "0", "CHINVEX_SESSION_CACHE": "0"}) == {}
    assert settings({"CHINVEX_HOME_ELSEWHERE": "x"}) == {"CHINVEX_HOME_ELSEWHERE": "x"}
