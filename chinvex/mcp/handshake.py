"""The replies `chinvex mcp` owes a client before its first tool call, recorded from the SDK.

A client (Claude Code, Codex) starts the server and sends `initialize`, then `tools/list` (and
often `prompts/list`, `resources/list`), and waits. Importing the MCP SDK alone takes most of the
handshake's time; but these replies depend only on the SDK version, on the protocol
version the client asks for, and on chinvex's tool definitions, all fixed when chinvex is
installed. So they are recorded here, once per protocol version, from the real server
(`record`), kept in `chinvex/mcp/handshake_replies.py`, and `chinvex.mcp.front` answers from
them while the SDK loads; the SDK then serves the session from the first request it was not
recorded for.

`python -m chinvex.mcp.handshake` rewrites the recording; `--check` exits 1 when it differs from
what the installed SDK and the current tool definitions answer, and a test runs that, so a
changed tool without a new recording fails CI. At run time the recording is only used with the
SDK version it was made with (`usable`); with any other, the SDK answers everything itself.

Only `usable` and `replies` run when the server starts: nothing here imports the SDK at module
level.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from chinvex.dev.regenerated import sync

DATA_PATH = Path(__file__).resolve().parent / "handshake_replies.py"
REGENERATE = "python -m chinvex.mcp.handshake"
LIST_METHODS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")
"""Requests answered from the recording after `initialize` (without params: no cursor)."""
RECORDED_METHODS = ("initialize", "ping", *LIST_METHODS)
SDK_DISTRIBUTION = "mcp"


# -- run time -------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def replies() -> dict[str, Any]:
    """The recording: {"sdk", "protocol_versions", "latest", "results": {method: {version: i}},
    "distinct": [result, ...], "tools": {name: definition}} (results are the same for most
    versions: each is kept once; a tool list names its tools, each defined once in "tools"; the
    initialize reply is kept without the protocol version it agrees on, which is the one asked)."""
    from chinvex.mcp import handshake_replies

    return handshake_replies.REPLIES


def profile_key(method: str, profile: str) -> str:
    """Where the recording keeps `method`'s result for a tool profile (chinvex.mcp.profiles):
    the tool list differs per profile, everything else is the default's."""
    return f"{method}@{profile}" if profile != "default" and method == "tools/list" else method


def result_for(method: str, version: str, profile: str = "default") -> Any:
    """The recorded result of `method` in a session at `version` with the tools of `profile`
    (KeyError: none recorded, e.g. a list of tool names: the SDK answers)."""
    data = replies()
    result = data["distinct"][data["results"][profile_key(method, profile)][version]]
    if method == "tools/list":
        definitions = data["tools"]
        return {**result, "tools": [definitions[name] for name in result["tools"]]}
    if method == "initialize":
        return {**result, "protocolVersion": version}
    return result


def installed_sdk_version() -> str | None:
    """The version of the SDK `import mcp` would load, from the name of the distribution folder
    beside it on sys.path: importing the SDK (or importlib.metadata) to learn it would
    cost what the recording saves."""
    prefix, suffix = f"{SDK_DISTRIBUTION}-", ".dist-info"
    for entry in sys.path:
        folder = entry or os.curdir
        # The folder `import mcp` loads from: the first holding the package itself. A folder
        # merely named mcp (a namespace portion, such as a project's own mcp/ directory) is
        # passed over by the import system when a real package follows, and so here.
        if not os.path.isfile(os.path.join(folder, SDK_DISTRIBUTION, "__init__.py")):
            continue
        try:
            names = [e.name for e in os.scandir(folder) if e.name.startswith(prefix) and e.name.endswith(suffix)]
        except OSError:
            return None
        return names[0][len(prefix):-len(suffix)] if len(names) == 1 else None
    return None


def usable() -> bool:
    """Whether the recording was made with the installed SDK (and can be read)."""
    try:
        return installed_sdk_version() == replies()["sdk"]
    except Exception:  # a broken recording is never worth a failed start
        return False


def negotiated(requested: Any) -> str:
    """The protocol version the SDK answers `initialize` with: the client's when it is one the
    handshake supports, else the newest one (the SDK's `_negotiate_initialize`)."""
    data = replies()
    return requested if requested in data["protocol_versions"] else data["latest"]


# -- recording ------------------------------------------------------------------------------------


def _request(request_id: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return orjson.dumps(message) + b"\n"


def _session(version: str, profile: str = "default") -> dict[str, Any]:
    """One session with the real server over its real stdio transport (through pipes, in this
    process): `initialize` at `version`, then every recorded method. Their results by method."""
    import anyio

    from chinvex.mcp.server import build_server
    from chinvex.mcp.state import ServerState
    from chinvex.mcp.transport import stdio_transport

    client_in, server_out = os.pipe()
    server_in, client_out = os.pipe()
    from chinvex.mcp.profiles import ENV_TOOLS

    server = build_server(ServerState(None, cwd=os.getcwd(), env={ENV_TOOLS: profile}))
    lowlevel = server._lowlevel_server  # as ChinvexMCPServer.run_stdio_async does

    async def serve() -> None:
        with os.fdopen(server_in, "rb") as stdin, os.fdopen(server_out, "wb") as stdout:
            async with stdio_transport(stdin, stdout) as (read_stream, write_stream):
                await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    thread = threading.Thread(target=anyio.run, args=(serve,), daemon=True)
    thread.start()
    results: dict[str, Any] = {}
    with os.fdopen(client_out, "wb") as send, os.fdopen(client_in, "rb") as receive:
        send.write(_request(0, "initialize", {"protocolVersion": version, "capabilities": {},
                                              "clientInfo": {"name": "chinvex-recorder", "version": "1"}}))
        send.flush()
        results["initialize"] = orjson.loads(receive.readline())["result"]
        send.write(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + b"\n")
        for number, method in enumerate(RECORDED_METHODS[1:], start=1):
            send.write(_request(number, method))
            send.flush()
            reply = orjson.loads(receive.readline())
            if reply.get("id") != number or "result" not in reply:
                raise RuntimeError(f"{method} at {version}: unexpected reply {reply!r}")
            results[method] = reply["result"]
    thread.join(timeout=30)
    return results


def record() -> dict[str, Any]:
    """What the installed SDK and the current tool definitions answer, per protocol version."""
    import importlib.metadata

    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    from chinvex.mcp.profiles import RECORDED_PROFILES

    results: dict[str, dict[str, int]] = {}
    distinct: list[Any] = []
    tools: dict[str, Any] = {}
    for profile in RECORDED_PROFILES:
        for version in HANDSHAKE_PROTOCOL_VERSIONS:
            for method, result in _session(version, profile).items():
                if profile != "default" and method != "tools/list":
                    continue  # only the tool list depends on the profile
                if method == "tools/list":
                    result = {**result, "tools": [_named(tools, tool) for tool in result["tools"]]}
                if method == "initialize":  # the same reply but for the version it agrees on
                    if result.get("protocolVersion") != version:
                        raise RuntimeError(f"initialize at {version} agreed on {result.get('protocolVersion')}")
                    result = {k: v for k, v in result.items() if k != "protocolVersion"}
                if result not in distinct:
                    distinct.append(result)
                results.setdefault(profile_key(method, profile), {})[version] = distinct.index(result)
    return {"sdk": importlib.metadata.version(SDK_DISTRIBUTION),
            "protocol_versions": list(HANDSHAKE_PROTOCOL_VERSIONS),
            "latest": LATEST_HANDSHAKE_VERSION, "results": results, "distinct": distinct, "tools": tools}


def _named(tools: dict[str, Any], tool: dict[str, Any]) -> str:
    """A tool's name, its definition kept once in `tools` (profiles list the same tools; a
    definition that differed between two lists would be a recording error)."""
    name = tool["name"]
    if tools.setdefault(name, tool) != tool:
        raise RuntimeError(f"tool {name} is defined differently in two tool lists")
    return name


def render(data: dict[str, Any]) -> str:
    """The recording as a Python module (a literal: no parsing at start-up, readable diffs)."""
    import pprint

    text = pprint.pformat(data, width=160, sort_dicts=False)
    # The marker on one line, so that indexers (chinvex's own) recognise a generated file.
    return (f'"""Generated by `{REGENERATE}`: do not edit. The handshake replies of the installed\n'
            'MCP SDK and chinvex\'s tool definitions (see chinvex/mcp/handshake.py)."""\n\n'
            f"REPLIES = {text}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the recording is out of date")
    parser.add_argument("--out", type=Path, default=DATA_PATH)
    args = parser.parse_args(argv)
    return sync(args.out, render(record()), check=args.check, command=REGENERATE)


if __name__ == "__main__":
    sys.exit(main())
