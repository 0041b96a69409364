"""Running `chinvex ui`: bind 127.0.0.1 (never another interface), print the URL with the run's
token as Jupyter does, open a browser unless asked not to, and serve with uvicorn until Ctrl-C.

The socket is bound here, before uvicorn starts, so that a port in use is a one-line usage
error instead of a uvicorn traceback, and so that `--port 0` (any free port) prints the port
actually used.
"""

from __future__ import annotations

import errno
import socket
import sys
import threading
import webbrowser

from chinvex.errors import UsageError
from chinvex.web.state import UiState

HOST = "127.0.0.1"


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:`port`, or a UsageError saying why not."""
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: expected 0 to 65535 (0: any free port)")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"--port {port}: already in use on {HOST} (another chinvex ui?); "
                             "pass another --port, or --port 0 for any free port") from None
        if exc.errno == errno.EACCES:
            raise UsageError(f"--port {port}: not permitted (ports below 1024 need privileges); "
                             "pass another --port") from None
        raise UsageError(f"--port {port}: cannot listen on {HOST}: {exc.strerror or exc}") from None
    return sock


def url_for(port: int, token: str) -> str:
    return f"http://{HOST}:{port}/?token={token}"


def serve(state: UiState, sock: socket.socket, *, open_browser: bool) -> None:
    """Serve until interrupted; the run's URL is the first line on stdout."""
    import uvicorn

    from chinvex.web.app import create_app

    port = sock.getsockname()[1]
    app = create_app(state, port=port)
    address = url_for(port, state.run.token)
    where = f" (context {state.default_context})" if state.default_context else ""
    sys.stdout.write(f"chinvex ui{where}: {address}\n")
    sys.stdout.write("Open that URL (it carries this run's token); Ctrl-C stops the server.\n")
    sys.stdout.flush()
    state.warm_up()
    if open_browser:
        threading.Timer(0.3, webbrowser.open, args=(address,)).start()
    config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False,
                            lifespan="off", proxy_headers=False, ws="none",
                            timeout_graceful_shutdown=3)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        state.close()
        sock.close()
