"""Issue 20: what each page of `chinvex ui` shows (contexts, search, documents, conversations,
Ask, memories, ingest now), over real HTTP against a real `chinvex ui` process (ui_harness).
"""

from __future__ import annotations

import re
import time

from ui_harness import CLAUDE_SESSION, LONG_THREAD, PATCH_THREAD, UiRun, page_links

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
    assert "stale: 1 source changed since the last ingest" in stale
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
        links = page_links(html, "hit")
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
        cites = page_links(html, "cite")
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
        home = client.get("/?context=nope")
        document = client.get("/document/doesnotexist?context=web")
    assert unknown.status_code == 404 and "Unknown context: nope" in unknown.text
    assert home.status_code == 404 and "Unknown context: nope" in home.text and "No contexts yet" not in home.text
    assert document.status_code == 404 and "No document" in document.text
