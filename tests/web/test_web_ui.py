"""Issue 20: `chinvex ui`, tested over real HTTP against a real `chinvex ui` process serving a
small real context (notes, a file of code, Codex sessions, a ChatGPT export; real SQLite, Chroma
and built-in embedder), started once for the module.

Security first (token, cookie, Host, cross-site POSTs, CSRF, CORS, headers, escaping of planted
`<script>` content), then what each page shows, then the command's user errors.
`running_ui` is shared with tests/web/test_web_browser.py.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from helpers import CHINVEX_BIN, FIXTURES, assert_no_traceback, run_cli

PATCH_THREAD = "0195aaaa-bbbb-7ccc-8ddd-eeeeffff0001"
LONG_THREAD = "0195aaaa-bbbb-7ccc-8ddd-eeeeffff0002"
LONG_EXCHANGES = 130
"""260 turns: three pages of the conversation viewer."""
CLAUDE_SESSION = "4c2ddfdc-b619-4525-8d03-1950fb1b0257"
"""A real Claude Code transcript with an Edit call (tests/fixtures/samples/PROVENANCE.md)."""
HOSTILE = '<script>alert("planted")</script>'


def _rollout(thread: str, items: list[dict], day: str = "2026-03-01") -> str:
    lines = [{"timestamp": f"{day}T10:00:00.000Z", "type": "session_meta",
              "payload": {"id": thread, "timestamp": f"{day}T10:00:00.000Z", "cwd": "/home/dev/shop",
                          "originator": "codex_cli_rs", "cli_version": "0.104.0", "source": "cli",
                          "model_provider": "openai"}}]
    for n, payload in enumerate(items, start=1):
        lines.append({"timestamp": f"{day}T10:{n // 60:02d}:{n % 60:02d}.000Z", "type": "response_item",
                      "payload": payload})
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def _message(role: str, text: str) -> dict:
    kind = "input_text" if role == "user" else "output_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def make_corpus(root: Path) -> dict[str, Path]:
    """Notes (one with planted markup), a code file, two Codex sessions (one with a shell call
    and a patch, one of 260 turns), a Claude Code session and a ChatGPT export."""
    notes, repo, codex, chat = root / "notes", root / "repo", root / "codex" / "sessions", root / "chat"
    claude = root / "claude"
    for folder in (notes, repo, codex / "2026" / "03" / "01", chat, claude):
        folder.mkdir(parents=True)
    (notes / "retry.md").write_text(
        "# Webhook retries\n\nThe webhook dispatcher retries failed deliveries with exponential backoff.\n"
        "The first retry waits 2 seconds; each later retry doubles the wait, up to 10 minutes.\n\n"
        "## Idempotency\n\nEvery delivery carries an idempotency key so receivers can drop duplicates.\n")
    (notes / "hostile.md").write_text(f"# Hostile note\n\nThis zanzibar note holds {HOSTILE} and <b>bold</b> "
                                      "markup that must be shown as text.\n")
    (notes / "stale-me.md").write_text("# Stale me\n\nA note the tests change after ingesting it.\n")
    (repo / "backoff.py").write_text(
        '"""Backoff schedule for webhook retries."""\n\n\n'
        "def backoff_seconds(attempt: int) -> float:\n"
        '    """Seconds to wait before retry number `attempt` (1-based)."""\n'
        "    return min(2.0 * 2 ** (attempt - 1), 600.0)\n")
    patch = ("*** Begin Patch\n*** Update File: dispatcher.py\n@@\n-RETRY_CAP_SECONDS = 600\n"
             '+RETRY_CAP_SECONDS = int(os.environ.get("RETRY_CAP_SECONDS", "600"))\n*** End Patch\n')
    day = codex / "2026" / "03" / "01"
    (day / f"rollout-2026-03-01T10-00-00-{PATCH_THREAD}.jsonl").write_text(_rollout(PATCH_THREAD, [
        _message("user", "Make the webhook retry cap configurable in the dispatcher."),
        _message("assistant", "I will read the dispatcher first."),
        {"type": "function_call", "name": "exec_command", "call_id": "call_a",
         "arguments": json.dumps({"cmd": "grep -n RETRY_CAP dispatcher.py"})},
        {"type": "function_call_output", "call_id": "call_a", "output": "Process exited with code 0\nOutput:\n12:RETRY_CAP_SECONDS = 600\n"},
        {"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_b", "input": patch},
        {"type": "custom_tool_call_output", "call_id": "call_b", "output": "Success. Updated the following files:\nM dispatcher.py\n"},
        _message("assistant", "The retry cap now comes from the RETRY_CAP_SECONDS environment variable."),
    ]))
    long_items = []
    for n in range(1, LONG_EXCHANGES + 1):
        long_items.append(_message("user", f"Question {n}: what is the status of migration step {n}?"))
        long_items.append(_message("assistant", f"Migration step {n} is done; the quokka{n} table was copied."))
    (day / f"rollout-2026-03-01T11-00-00-{LONG_THREAD}.jsonl").write_text(_rollout(LONG_THREAD, long_items))
    shutil.copy(FIXTURES / "chatgpt-export" / "chatlore" / "conversations.json", chat / "conversations.json")
    shutil.copy(FIXTURES / "claude-code" / "codemie-code" / "projects" / "-tmp-private" / f"{CLAUDE_SESSION}.jsonl", claude)
    return {"notes": notes, "repo": repo, "codex": codex, "chat": chat, "claude": claude}


@dataclass
class UiRun:
    base: str
    token: str
    home: Path
    env: dict[str, str]
    corpus: dict[str, Path]
    proc: subprocess.Popen
    log: Path
    """The server's stderr."""

    @property
    def url(self) -> str:
        return f"{self.base}/?token={self.token}"

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])

    def client(self, *, authenticated: bool = True) -> httpx.Client:
        client = httpx.Client(base_url=self.base, follow_redirects=False, timeout=60)
        if authenticated:
            client.cookies.set(f"chinvex_ui_{self.port}", self.token)
        return client

    def config(self):
        from chinvex.context.registry import load_config_file

        return load_config_file(self.home / "contexts" / "web" / "context.json")


def _add_memory(run_home: Path) -> str:
    """One knowledge item, as `recall_add` stores it, with planted markup in its content."""
    from chinvex.memory.items import insert_memory, make_memory
    from chinvex.context.registry import load_config_file
    from chinvex.storage import db

    config = load_config_file(run_home / "contexts" / "web" / "context.json")
    conn = db.connect(Path(config.index.sqlite_path))
    try:
        item = make_memory("decision", "Cap webhook retries", f"Retries stop after 10 minutes. {HOSTILE}",
                           scope="project", tags=["webhooks"], metadata={})
        insert_memory(conn, item)
    finally:
        conn.close()
    return item.item_id


def _first_line(proc: subprocess.Popen, timeout: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        raise AssertionError(f"chinvex ui printed nothing in {timeout} s")
    return proc.stdout.readline()


@contextmanager
def running_ui(base_dir: Path) -> Iterator[UiRun]:
    """A context "web" over `make_corpus`, ingested, with one memory, served by `chinvex ui
    --port 0 --no-open` until the block ends."""
    corpus = make_corpus(base_dir / "corpus")
    home = base_dir / "home"
    env = {"CHINVEX_HOME": str(home), "ANONYMIZED_TELEMETRY": "False"}
    created = run_cli("context", "create", "web", "--note-root", str(corpus["notes"]), "--repo", str(corpus["repo"]),
                      "--codex-sessions", str(corpus["codex"]), "--chat-root", str(corpus["chat"]),
                      "--claude-sessions", str(corpus["claude"]), env=env)
    assert created.code == 0, created
    config_file = home / "contexts" / "web" / "context.json"
    data = json.loads(config_file.read_text())
    data["codex_appserver"] = {"mode": "off"}  # the rollout files only: no codex binary needed
    config_file.write_text(json.dumps(data))
    ingested = run_cli("ingest", "--context", "web", "--json", env=env)
    assert ingested.json["sources"]["indexed"] >= 7, ingested
    _add_memory(home)
    with serving_ui("web", home, base_dir / "ui-stderr.log", corpus) as run:
        yield run


@contextmanager
def serving_ui(context: str, home: Path, log: Path, corpus: dict[str, Path] | None = None) -> Iterator[UiRun]:
    """`chinvex ui --context CONTEXT --port 0 --no-open` over the contexts of `home`, until the
    block ends; its stderr goes to `log`."""
    env = {"CHINVEX_HOME": str(home), "ANONYMIZED_TELEMETRY": "False"}
    full_env = {k: v for k, v in os.environ.items() if k not in ("CHINVEX_CONTEXT",)}
    full_env.update(env)
    # A file, not a pipe nobody reads, which could fill and block.
    with open(log, "w") as stderr:
        proc = subprocess.Popen([str(CHINVEX_BIN), "ui", "--context", context, "--port", "0", "--no-open"],
                                stdout=subprocess.PIPE, stderr=stderr, text=True, env=full_env)
    try:
        line = _first_line(proc, 60)
        match = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=([\w-]+)", line)
        assert match, f"no URL in {line!r}; stderr: {log.read_text()[-2000:]}"
        yield UiRun(base=match.group(1), token=match.group(2), home=home, env=env, corpus=corpus or {}, proc=proc,
                    log=log)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture(scope="module")
def ui(tmp_path_factory) -> Iterator[UiRun]:
    with running_ui(tmp_path_factory.mktemp("web_ui")) as run:
        yield run
    assert "Traceback" not in run.log.read_text(), run.log.read_text()[-3000:]  # no page failed


def _links(html: str, css_class: str) -> list[str]:
    return [h.replace("&amp;", "&") for h in re.findall(rf'<a class="{css_class}" href="([^"]+)"', html)]


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
        link = next(l for l in _links(hit, "hit") if "/document/" in l)
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


# -- pages ------------------------------------------------------------------------------------


def test_contexts_page_shows_sources_counts_freshness_and_coverage(ui: UiRun):
    with ui.client() as client:
        fresh = client.get("/").text
        assert 'id="context-web"' in fresh
        for root in ui.corpus.values():
            assert str(root) in fresh
        for source_type in ("note", "repo", "codex_session", "chat"):
            assert f"type={source_type}" in fresh
        assert "fresh: every indexed source is as it was indexed" in fresh
        assert "100 %" in fresh and "builtin:" in fresh
        (ui.corpus["notes"] / "stale-me.md").write_text("# Stale me\n\nChanged after the ingest.\n")
        stale = client.get("/?context=web").text
    assert "stale: 1 source(s) changed since the last ingest" in stale
    assert "stale-me.md" in stale


def test_search_applies_filters_and_explains_scores(ui: UiRun):
    with ui.client() as client:
        page = client.get("/search", params={"q": "webhook retry", "explain": "1", "context": "web"})
        assert page.status_code == 200
        html = page.text
        assert 'class="results explained"' in html
        assert "lexical (BM25)" in html and "vector (cosine)" in html and "× source" in html
        assert re.search(r"lexical weight 0\.\d+, vector 0\.\d+", html)
        assert "<mark>retries</mark>" in html  # the stem of "retry", as FTS matched it
        only_notes = client.get("/search", params={"q": "webhook retry", "type": "note"}).text
        badges = re.findall(r'<span class="rank">\d+\.</span> <span class="badge">([^<]+)</span>', only_notes)
        assert badges and set(badges) == {"note"}
        by_path = client.get("/search", params={"q": "webhook retry", "path": "*.py"}).text
        assert set(re.findall(r'<span class="badge">([^<]+)</span>\s*<a class="hit"', by_path)) == {"repo"}
        fel = client.get("/search", params={"q": "retry", "filter": "doc.source_type = 'codex_session'"}).text
        assert set(re.findall(r'<span class="badge">([^<]+)</span>\s*<a class="hit"', fel)) == {"codex_session"}
        bad_filter = client.get("/search", params={"q": "retry", "filter": "doc.colour = 'red'"})
        bad_date = client.get("/search", params={"q": "retry", "since": "last tuesday"})
        bad_type = client.get("/search", params={"q": "retry", "type": "tweets"})
    assert bad_filter.status_code == 400 and "colour" in bad_filter.text
    assert bad_date.status_code == 400 and "not a date" in bad_date.text
    assert bad_type.status_code == 400 and "tweets" in bad_type.text


def test_hits_open_the_document_lines_or_the_conversation_turn(ui: UiRun):
    with ui.client() as client:
        html = client.get("/search", params={"q": "webhook retry cap dispatcher", "k": "20"}).text
        links = _links(html, "hit")
        doc_link = next(l for l in links if "/document/" in l and "#L" in l)
        turn_link = next(l for l in links if f"/conversation/{PATCH_THREAD}" in l)
        assert re.search(r"turn=\d+.*#turn-\d+$", turn_link)
        document = client.get(doc_link).text
        chunk = re.search(r"chunk=(\w+)", doc_link).group(1)
        assert f'id="chunk-{chunk}"' in document
        assert '<tr id="L1" class="hit">' in document
        assert re.search(r'<td class="ln"><a href="#L2">2</a></td>', document)
        assert "<mark>" in document
        turn = int(re.search(r"#turn-(\d+)", turn_link).group(1))
        conversation = client.get(turn_link).text
        assert f'target" id="turn-{turn}"' in conversation


def test_conversation_viewer_folds_tools_shows_patches_and_pages_long_threads(ui: UiRun):
    with ui.client() as client:
        html = client.get(f"/conversation/{PATCH_THREAD}?context=web").text
        assert html.count('<details class="tool">') == 2  # the shell call and the patch, folded
        assert '<span class="del">-RETRY_CAP_SECONDS = 600</span>' in html
        assert '<span class="add">+RETRY_CAP_SECONDS = int(' in html
        assert re.search(r'<span class="role">user</span> <time datetime="2026-03-01T10:00:01', html)
        target = client.get(f"/conversation/{PATCH_THREAD}?context=web&turn=4").text
        assert re.search(r'class="turn role-tool target" id="turn-4">.*?<details class="tool" open>', target, re.S)
        first = client.get(f"/conversation/{LONG_THREAD}?context=web").text
        assert "page 1 of 3" in first and 'id="turn-100"' in first and 'id="turn-101"' not in first
        jump = client.get(f"/conversation/{LONG_THREAD}", params={"context": "web", "jump": "1", "turn": "230"})
        assert jump.status_code == 303 and jump.headers["location"].endswith("turn=230#turn-230")
        landed = client.get(jump.headers["location"]).text
        assert "page 3 of 3" in landed and 'class="turn role-assistant target" id="turn-230"' in landed
        assert "quokka115" in landed and "quokka99 " not in landed
        claude = client.get(f"/conversation/{CLAUDE_SESSION}?context=web").text
        assert '<summary>tool <code>Edit</code> · patch' in claude
        assert '<span class="del">-def main():</span>' in claude and '<span class="add">+# Simple hello world program</span>' in claude
        chat = client.get("/documents?context=web&type=chat").text
        chat_link = re.search(r'href="(/conversation/[^"]+)">Postgres indexing<', chat).group(1).replace("&amp;", "&")
        postgres = client.get(chat_link).text
        assert '<span class="role">assistant</span>' in postgres and "composite index" in postgres
        ambiguous = client.get(f"/conversation/{LONG_THREAD[:13]}?context=web")  # both threads start so
        missing = client.get("/conversation/0000000000?context=web")
    assert ambiguous.status_code == 400 and "more than one conversation id" in ambiguous.text
    assert missing.status_code == 404 and "No conversation" in missing.text


def test_ask_answers_with_citations_that_open_the_cited_lines(ui: UiRun):
    with ui.client() as client:
        html = client.get("/ask", params={"q": "How long does the first webhook retry wait?"}).text
        assert 'id="answer"' in html and "2 seconds" in html
        # each source shows the words the answer rests on
        quotes = re.findall(r'<div class="quote">(.*?)</div>', html, re.S)
        assert quotes and any("2 seconds" in q for q in quotes), html
        cites = _links(html, "cite")
        assert cites, html
        cited = client.get(cites[0]).text
        assert 'class="hit"' in cited and "The first retry waits 2 seconds" in re.sub(r"</?mark>", "", cited)
        refused = client.get("/ask", params={"q": "What is the capital of Mongolia?"}).text
    assert 'id="refusal"' in refused


def test_memories_show_items_and_record_feedback_through_a_csrf_post(ui: UiRun):
    with ui.client() as client:
        html = client.get("/memories?context=web").text
        item_id = re.search(r'id="item-([A-Z]-[0-9a-f]{8})"', html).group(1)
        assert "Cap webhook retries" in html and "useful 0" in html
        csrf = re.search(r'name="csrf" value="([^"]+)"', html).group(1)
        posted = client.post("/memories/feedback", headers={"Origin": ui.base}, data={
            "csrf": csrf, "context": "web", "item_id": item_id, "feedback": "useful", "note": "saved me <i>hours</i>"})
        assert posted.status_code == 303 and posted.headers["location"].endswith(f"#item-{item_id}")
        after = client.get("/memories?context=web").text
    assert "useful 1" in after and "saved me &lt;i&gt;hours&lt;/i&gt;" in after and "(chinvex-ui)" in after


def test_ingest_now_runs_in_the_background_and_reports_progress(ui: UiRun):
    (ui.corpus["notes"] / "added.md").write_text("# Added later\n\nA note written while the UI was running.\n")
    with ui.client() as client:
        before = client.get("/ingest?context=web").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', before).group(1)
        started = client.post("/ingest", data={"csrf": csrf, "context": "web"}, headers={"Origin": ui.base})
        assert started.status_code == 303
        job_id = re.search(r"job=(\w+)", started.headers["location"]).group(1)
        deadline = time.monotonic() + 60
        while True:
            status = client.get(f"/api/ingest/{job_id}").json()
            if status["state"] in ("done", "failed") or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert status["state"] == "done", status
        assert status["done"] == status["total"] >= 7
        assert status["summary"]["sources"]["indexed"] >= 1 and status["summary"]["errors"] == []
        page = client.get(started.headers["location"]).text
        assert 'data-state="done"' in page and re.search(r"finished: \d+ ingested", page)
        assert page.count('class="run status-') == before.count('class="run status-') + 1
        assert "Added later" in client.get("/documents?context=web&type=note").text
        assert client.get("/api/ingest/unknown").status_code == 404


def test_ingest_now_while_another_writer_holds_the_context_fails_with_its_reason(ui: UiRun):
    from chinvex.locking import context_lock

    with ui.client() as client, context_lock(ui.config(), purpose="a test's ingest"):
        csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/ingest?context=web").text).group(1)
        started = client.post("/ingest", data={"csrf": csrf, "context": "web"}, headers={"Origin": ui.base})
        job_id = re.search(r"job=(\w+)", started.headers["location"]).group(1)
        deadline = time.monotonic() + 30
        while (status := client.get(f"/api/ingest/{job_id}").json())["state"] not in ("done", "failed"):
            assert time.monotonic() < deadline, status
            time.sleep(0.05)
        page = client.get(started.headers["location"]).text
    assert status["state"] == "failed" and "is busy" in status["error"] and "a test's ingest" in status["error"]
    assert 'data-state="failed"' in page and "failed: Context &#39;web&#39; is busy" in page


def test_documents_list_filters_by_type_and_path_and_opens_conversations_in_the_viewer(ui: UiRun):
    with ui.client() as client:
        everything = client.get("/documents?context=web").text
        notes = client.get("/documents", params={"context": "web", "type": "note"}).text
        code = client.get("/documents", params={"context": "web", "path": "repo/back"}).text
    assert "Webhook retries" in everything and f"/conversation/{LONG_THREAD}" in everything
    assert "Webhook retries" in notes and "backoff.py" not in notes and "/conversation/" not in notes
    assert "backoff.py" in code and "Webhook retries" not in code and re.search(r">1 document,", code)


def test_unknown_context_and_document_are_error_pages(ui: UiRun):
    with ui.client() as client:
        unknown = client.get("/search?context=nope&q=x")
        document = client.get("/document/doesnotexist?context=web")
    assert unknown.status_code == 404 and "Unknown context: nope" in unknown.text
    assert document.status_code == 404 and "No document" in document.text


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
        line = _first_line(proc, 60)
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


# -- pure helpers -----------------------------------------------------------------------------


def test_highlighter_escapes_before_marking():
    from chinvex.web.highlight import Highlighter

    with Highlighter(["retry", "script"]) as highlight:
        out = str(highlight('Retries <script>alert("x")</script> & retry_cap'))
    assert out == ('<mark>Retries</mark> &lt;<mark>script</mark>&gt;alert(&#34;x&#34;)&lt;/<mark>script</mark>&gt; '
                   '&amp; <mark>retry_cap</mark>')
    with Highlighter([]) as nothing:
        assert str(nothing("<i>")) == "&lt;i&gt;"


def test_patches_are_recognised_in_both_forms():
    from chinvex.web.pages.conversations import diff_lines, edit_diff

    codex = diff_lines("Tool: apply_patch\n*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch\nOutput:\n-1")
    assert [c for c, _ in codex] == ["", "file", "file", "hunk", "del", "add", "file", "", ""]
    unified = diff_lines("--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y")
    assert [c for c, _ in unified] == ["file", "file", "hunk", "del", "add"]
    assert diff_lines("$ ls -la\n-rw-r--r-- a") is None
    assert edit_diff({"name": "Edit", "input": {"file_path": "a.py", "old_string": "x", "new_string": "y"}}) == [
        ("file", "*** a.py"), ("del", "-x"), ("add", "+y")]


def test_urls_leave_out_empty_parameters_and_take_any_name():
    from chinvex.web.render import url

    assert url("/documents", context="web", path="src/", type="", page=2) == "/documents?context=web&path=src%2F&page=2"
    assert url("/search", q="a&b", type=["note", "repo"], explain=True) == "/search?q=a%26b&type=note&type=repo&explain=1"


def test_an_answer_quoting_a_block_shows_it_as_a_block():
    from chinvex.web.pages.ask import linked_answer

    text = ('“add to `config.toml`” [chunk:abc123abc123]\n```toml\n[mcp_servers.chinvex]\ncommand = "<x>"\n```'
            "\n\nSecond line [chunk:def456def456]")
    html = str(linked_answer(text, {"abc123abc123": 1, "def456def456": 2},
                             {"abc123abc123": "/a", "def456def456": "/b"}))
    assert '<p>“add to `config.toml`” <a class="cite" href="/a"' in html
    assert '<pre class="snippet">[mcp_servers.chinvex]\ncommand = &#34;&lt;x&gt;&#34;</pre>' in html
    assert html.endswith('<p>Second line <a class="cite" href="/b" title="def456def456">[2]</a></p>')
