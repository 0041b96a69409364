"""Issue 20: `chinvex ui` over real HTTP against a real `chinvex ui` process serving a small
real context (ui_harness): security first (token, cookie, Host, cross-site POSTs, CSRF, CORS,
headers, escaping of planted `<script>` content), then the command's user errors. What each page
shows: test_web_pages.py; pure helpers: test_web_helpers.py.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from pathlib import Path

import httpx
from helpers import CHINVEX_BIN, assert_no_traceback, run_cli
from ui_harness import HOSTILE, UiRun, first_line, page_links

# -- security ---------------------------------------------------------------------------------


def test_every_request_without_the_token_is_forbidden(ui: UiRun):
    with ui.client(authenticated=False) as anonymous:
        for path in ("/", "/search?q=webhook", "/static/app.css", "/api/ingest/abc", "/favicon.ico", "/nope"):
            response = anonymous.get(path)
            assert response.status_code == 403, path
            assert "webhook" not in response.text
        assert anonymous.get("/?token=" + ui.token[:-1] + "x").status_code == 403
        assert anonymous.post("/ingest", data={"context": "web"}).status_code == 403
        anonymous.cookies.set(f"chinvex_ui_{ui.port}", "not-the-token")
        assert anonymous.get("/").status_code == 403


def test_the_token_is_traded_for_a_strict_http_only_cookie_and_leaves_the_url(ui: UiRun):
    with ui.client(authenticated=False) as browser:
        first = browser.get(f"/search?q=webhook&amp=%22%3E&token={ui.token}")
        # Not a redirect (a cross-site navigation's redirect would not carry the Strict cookie):
        # a page of this origin that refreshes to the same address without the token.
        assert first.status_code == 200
        assert '<meta http-equiv="refresh" content="0; url=/search?q=webhook&amp;amp=%22%3E">' in first.text
        assert ui.token not in first.text
        cookie = first.headers["set-cookie"]
        assert cookie.startswith(f"chinvex_ui_{ui.port}={ui.token};")
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
        page = browser.get("/search?q=webhook")  # the client now sends the cookie
        assert page.status_code == 200 and "Webhook retries" in page.text
        # No way off the server through the path: `//host` stays on this server.
        sneaky = httpx.get(f"{ui.base}//evil.example/?token={ui.token}", follow_redirects=False)
        assert sneaky.status_code == 200 and 'url=/evil.example/"' in sneaky.text


def test_a_foreign_host_header_is_refused_even_with_the_cookie(ui: UiRun):
    """A DNS-rebinding page reaches 127.0.0.1 under its own host name."""
    with ui.client() as client:
        assert client.get("/", headers={"Host": f"rebind.example:{ui.port}"}).status_code == 403
        assert client.get("/", headers={"Host": f"localhost:{ui.port}"}).status_code == 200


def test_cross_site_and_csrf_less_posts_are_rejected_and_change_nothing(ui: UiRun):
    from chinvex.web.security import CSP

    with ui.client() as client:
        csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/ingest?context=web").text).group(1)
        form = {"context": "web", "csrf": csrf}
        refused = [
            client.post("/ingest", data=form, headers={"Origin": "http://evil.example"}),
            client.post("/ingest", data=form, headers={"Sec-Fetch-Site": "cross-site"}),
            client.post("/ingest", data=form, headers={"Origin": "null"}),
            client.post("/ingest", data={"context": "web"}, headers={"Origin": ui.base}),
            client.post("/ingest", data={"context": "web", "csrf": csrf[:-1] + "x"}, headers={"Origin": ui.base}),
            client.post("/ingest", json=form, headers={"Origin": ui.base}),
            client.post("/memories/feedback", data={**form, "item_id": "D-00000000", "feedback": "useful"},
                        headers={"Origin": "http://evil.example"}),
        ]
        assert [r.status_code for r in refused] == [403] * len(refused)
        assert "cross-site" in refused[0].text and "CSRF" in refused[3].text
        assert refused[0].headers["content-security-policy"] == CSP
        assert 'id="job"' not in client.get("/ingest?context=web").text  # no ingest was started
        # The same form from the page itself passes the guard (the header form of the token too).
        ok = client.post("/memories/feedback", data={**form, "item_id": "D-00000000", "feedback": "useful"},
                         headers={"Origin": ui.base, "Sec-Fetch-Site": "same-origin"})
        assert ok.status_code == 404 and "No knowledge item" in ok.text  # past the guard, unknown id
        by_header = client.post("/api/ingest/none", headers={"X-CSRF-Token": csrf, "Origin": ui.base})
        assert by_header.status_code == 405


def test_no_cors_and_strict_security_headers(ui: UiRun):
    with ui.client() as client:
        page = client.get("/search?q=webhook", headers={"Origin": "http://evil.example"})
        preflight = client.request("OPTIONS", "/ingest", headers={
            "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
        status = client.get("/api/ingest/none", headers={"Origin": "http://evil.example"})
    for response in (page, preflight, status):
        assert not any(h.lower().startswith("access-control-") for h in response.headers), response.headers
    assert preflight.status_code in (403, 405)
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["referrer-policy"] == "same-origin"


def test_planted_script_content_is_shown_as_text_everywhere(ui: UiRun):
    with ui.client() as client:
        hit = client.get("/search", params={"q": "zanzibar hostile note", "context": "web"}).text
        link = next(l for l in page_links(hit, "hit") if "/document/" in l)
        pages = {
            "search": hit,
            "document": client.get(link).text,
            "memories": client.get("/memories?context=web").text,
            "reflected query": client.get("/search", params={"q": HOSTILE}).text,
            "reflected path": client.get(f"/document/{HOSTILE}?context=web").text,
            "ask": client.get("/ask", params={"q": "what does the zanzibar hostile note hold?"}).text,
        }
    for name, html in pages.items():
        assert '<script>alert("planted")' not in html, name
        assert "<b>bold</b>" not in html, name
        scripts = re.findall(r"<script[^>]*>", html)
        assert scripts == ['<script src="/static/app.js" defer>'], (name, scripts)
    assert "&lt;script&gt;alert(&#34;planted&#34;)&lt;/script&gt;" in pages["document"]
    assert "&lt;b&gt;bold&lt;/b&gt;" in pages["document"]
    assert "&lt;script&gt;" in pages["memories"] and "&lt;script&gt;" in pages["reflected query"]


# -- the command ------------------------------------------------------------------------------


def test_user_mistakes_are_one_line_errors(ui: UiRun):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        in_use = run_cli("ui", "--context", "web", "--port", str(port), "--no-open", env=ui.env, timeout=60)
    unknown = run_cli("ui", "--context", "nope", "--port", "0", "--no-open", env=ui.env, timeout=60)
    bad_port = run_cli("ui", "--context", "web", "--port", "70000", "--no-open", env=ui.env, timeout=60)
    for result in (in_use, unknown, bad_port):
        assert_no_traceback(result)
        assert len(result.stderr.strip().splitlines()) == 1, result
    assert in_use.code == 2 and f"--port {port}: already in use" in in_use.stderr
    assert unknown.code == 1 and "Unknown context: nope" in unknown.stderr
    assert bad_port.code == 2 and "expected 0 to 65535" in bad_port.stderr


def test_ctrl_c_stops_the_server_cleanly(ui: UiRun, tmp_path: Path):
    import signal

    env = {**os.environ, **ui.env}
    env.pop("CHINVEX_CONTEXT", None)
    with open(tmp_path / "stderr", "w") as stderr:
        proc = subprocess.Popen([str(CHINVEX_BIN), "ui", "--port", "0", "--no-open"], stdout=subprocess.PIPE,
                                stderr=stderr, text=True, env=env, cwd=tmp_path)
    try:
        line = first_line(proc, 60)
        assert "(context web)" not in line  # no --context and none inferred: opens on the first one
        base, token = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=([\w-]+)", line).groups()
        with httpx.Client(base_url=base) as client:
            client.get(f"/?token={token}")
            assert 'Search <span class="dim">in web' in client.get("/search").text
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert "Traceback" not in (tmp_path / "stderr").read_text()
