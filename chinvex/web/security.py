"""Who may talk to `chinvex ui`, enforced once for every request (pages, JSON, static files).

The server binds 127.0.0.1 only, but any web page the user visits can make the browser send
requests to localhost, and any local user can connect to the port. So, as Jupyter does:

- a random token per run is required: in the URL the command prints (`?token=...`), which is
  traded on first use for a cookie (HttpOnly, SameSite=Strict, named after the port so two
  servers do not overwrite each other's) and removed from the address bar (see
  `_trade_token_for_cookie`);
  anything without the token or the cookie gets 403;
- the Host header must name this server (a DNS-rebinding page has another one);
- a state-changing request (any method but GET/HEAD) must come from this origin (Origin and
  Sec-Fetch-Site, when the browser sends them, are checked) and carry the run's CSRF token, in
  the form field `csrf` or the `X-CSRF-Token` header;
- no CORS header is ever sent, and every response forbids framing, sniffing, referrers to other
  sites and any script or style not served by the app itself (Content-Security-Policy), a second
  line behind the templates' escaping.

Pure ASGI rather than a Starlette middleware class: it runs before routing for every request,
static files included, and costs microseconds.
"""

from __future__ import annotations

import hmac
import html
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SAFE_METHODS = frozenset({"GET", "HEAD"})
TOKEN_PARAM = "token"
CSRF_FIELD = "csrf"
CSRF_HEADER = b"x-csrf-token"
MAX_FORM_BYTES = 64 * 1024
"""A form this app posts is a few hundred bytes; anything larger is not one of ours."""

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # Not no-referrer: under it browsers send `Origin: null` with a form POST, and the origin
    # check could not tell the app's own forms from a sandboxed foreign page.
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


@dataclass(frozen=True)
class RunSecrets:
    """The token a person opens the app with and the CSRF token its forms carry; both new for
    every run, so a URL or page left over from an earlier run is worthless."""

    token: str
    csrf: str

    @classmethod
    def new(cls) -> RunSecrets:
        return cls(token=secrets.token_urlsafe(32), csrf=secrets.token_urlsafe(32))


def cookie_name(port: int) -> str:
    """Cookies are not separated by port: two servers on one host need two names."""
    return f"chinvex_ui_{port}"


def origins(port: int) -> frozenset[str]:
    return frozenset({f"http://127.0.0.1:{port}", f"http://localhost:{port}"})


def _same(a: str | None, b: str) -> bool:
    return a is not None and hmac.compare_digest(a.encode(), b.encode())


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key == name:
            return value.decode("latin-1")
    return None


def _cookie(scope: Scope, name: str) -> str | None:
    raw = _header(scope, b"cookie")
    if not raw:
        return None
    for part in raw.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


async def _plain(send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *SECURITY_HEADERS, *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """The ASGI wrapper that enforces the rules of this module's docstring."""

    def __init__(self, app: ASGIApp, *, run: RunSecrets, port: int):
        self.app = app
        self.run = run
        self.port = port
        self.cookie = cookie_name(port)
        self.origins = origins(port)
        self.hosts = frozenset(o.split("//", 1)[1] for o in self.origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no websockets here
            await send({"type": "websocket.close", "code": 1008})
            return
        if _header(scope, b"host") not in self.hosts:
            await _plain(send, 403, "Forbidden: unexpected Host header (chinvex ui answers "
                         f"http://127.0.0.1:{self.port}/ only).")
            return
        method = scope["method"]
        if not _same(_cookie(scope, self.cookie), self.run.token):
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
            if method in SAFE_METHODS and _same(query.get(TOKEN_PARAM), self.run.token):
                await self._trade_token_for_cookie(scope, send, query)
                return
            await _plain(send, 403, "Forbidden: open the URL `chinvex ui` printed (it carries this "
                         "run's token).")
            return
        if method not in SAFE_METHODS:
            refused = self._cross_site(scope)
            if refused:
                await _plain(send, 403, f"Forbidden: {refused}.")
                return
            receive, ok = await self._csrf(scope, receive)
            if not ok:
                await _plain(send, 403, "Forbidden: missing or wrong CSRF token (reload the page).")
                return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    async def _trade_token_for_cookie(self, scope: Scope, send: Send, query: dict[str, str]) -> None:
        """Set the cookie and move on to the same page without the token, so the token does not
        stay in the address bar, the history or a bookmark.

        Not an HTTP redirect: when the printed URL is opened from another site (a link in a web
        chat or a browser-based terminal), a redirect still belongs to that cross-site navigation
        and the browser would not send the SameSite=Strict cookie just set, so the page would
        answer 403. A refresh issued by this page is a navigation of this origin's own."""
        rest = {k: v for k, v in query.items() if k != TOKEN_PARAM}
        path = "/" + scope["path"].lstrip("/")  # never `//host`: that would leave the server
        location = html.escape(quote(path) + (f"?{urlencode(rest)}" if rest else ""))
        cookie = f"{self.cookie}={self.run.token}; Path=/; HttpOnly; SameSite=Strict"
        body = (f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0; url={location}">'
                f'<title>chinvex</title><p><a href="{location}">Continue to chinvex</a></p>\n').encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/html; charset=utf-8"),
                                (b"content-length", str(len(body)).encode()), (b"set-cookie", cookie.encode()),
                                *SECURITY_HEADERS]})
        await send({"type": "http.response.body", "body": body})

    def _cross_site(self, scope: Scope) -> str | None:
        """Why a state-changing request is refused as cross-site, or None. Browsers send Origin
        with every POST and Sec-Fetch-Site with every request; a client that sends neither (curl)
        still needs the cookie and the CSRF token."""
        site = _header(scope, b"sec-fetch-site")
        if site is not None and site != "same-origin":
            return f"cross-site request refused (Sec-Fetch-Site: {site})"
        origin = _header(scope, b"origin")
        if origin is not None and origin not in self.origins:
            return f"cross-site request refused (Origin: {origin})"
        return None

    async def _csrf(self, scope: Scope, receive: Receive) -> tuple[Receive, bool]:
        """Check the CSRF token (header, else the urlencoded form field). The body read for it is
        handed on to the app unchanged."""
        if _same(_header(scope, CSRF_HEADER), self.run.csrf):
            return receive, True
        content_type = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
        if content_type != "application/x-www-form-urlencoded":
            return receive, False
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return receive, False
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > MAX_FORM_BYTES:
                return receive, False
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        fields = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay, _same(fields.get(CSRF_FIELD), self.run.csrf)
