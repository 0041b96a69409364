"""Issue 20: the web UI's pure helpers (highlighting, patches, URLs, quoted answers)."""

from __future__ import annotations

# -- pure helpers -----------------------------------------------------------------------------


def test_highlighter_escapes_before_marking():
    from chinvex.web.highlight import Highlighter

    with Highlighter(["retry", "script"]) as highlight:
        out = str(highlight('Retries <script>alert("x")</script> & retry_cap'))
    assert out == ('<mark>Retries</mark> &lt;<mark>script</mark>&gt;alert(&#34;x&#34;)&lt;/<mark>script</mark>&gt; '
                   '&amp; <mark>retry_cap</mark>')
    with Highlighter([]) as nothing:
        assert str(nothing("<i>")) == "&lt;i&gt;"


def test_a_snippet_starts_at_the_line_holding_most_of_the_query():
    from chinvex.web.highlight import Highlighter

    lines = [f"filler line {n}" for n in range(20)]
    lines[3] = "the contexts are listed here"
    lines[12] = "CHINVEX_CONTEXTS_ROOT moves the contexts folder"
    with Highlighter(["moves", "contexts", "folder"]) as highlight:
        snippet = str(highlight.snippet("\n".join(lines), max_lines=3))
    assert snippet.startswith("…\nfiller line 11\n") and "<mark>folder</mark>" in snippet
    assert "listed here" not in snippet


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


def test_ingest_history_counts_in_english_and_names_a_warned_file_once():
    """"1 warning", not "1 warning(s)"; a message that starts with its file is not prefixed by
    the file again."""
    from chinvex.web.render import environment

    warned = "/n/latin1.md"
    run = {"started_at": "2026-11-29T09:34:00Z", "status": "completed",
           "stats": {"duration_s": 0.7, "sources": {"scanned": 2, "indexed": 1}, "chunks": {},
                     "errors": [{"source_uri": "/n/gone.md", "message": "permission denied"}],
                     "warnings": [{"source_uri": warned, "message": f"{warned}: 3 invalid utf-8 bytes replaced"}]}}
    html = environment().get_template("ingest.html").render(page="ingest", context="P", contexts=["P"], csrf="t",
                                                            runs=[run])
    assert "1 error, 1 warning</summary>" in html
    assert html.count(warned) == 1 and "<code>/n/gone.md</code>: permission denied" in html


def test_a_conversation_hit_names_its_agent_not_its_reader():
    from types import SimpleNamespace

    from chinvex.models.responses import SearchResponse
    from chinvex.web.highlight import Highlighter
    from chinvex.web.pages.search import result_views

    hit = {"rank": 1, "chunk_id": "c1", "doc_id": "d1", "context": "P", "source_type": "codex_session",
           "source_uri": "/x/rollout.jsonl", "title": "fix the deploy", "text": "[Turn 3 of 5] user:\nhello",
           "range": {"char_start": 0, "char_end": 5}, "scores": {"rank": 0.5},
           "metadata": {"source": "cx_sessions_jsonl", "turn_start": 2, "turn_end": 2, "thread_id": "t1"}}
    response = SearchResponse.model_validate({"query": "deploy", "contexts": ["P"], "k": 1, "results": [hit],
                                              "stats": {"took_ms": 1.0, "candidates": 1, "mode": "hybrid"}})
    with Highlighter([]) as highlight:
        [view] = result_views(response, SimpleNamespace(name="P"), "deploy", highlight)
    assert view["session"]["agent"] == "codex"


def test_the_contexts_page_names_source_kinds_in_words(tmp_path):
    from chinvex.context.registry import Registry
    from chinvex.web.pages.contexts import context_panel

    notes = tmp_path / "notes"
    notes.mkdir()
    config = Registry().create("Words", includes={"note_roots": [str(notes)], "sessions": ["auto"]}).config
    panel = context_panel(config)
    assert panel["includes"] == [("note root", [str(notes)]), ("agent sessions", ["auto"])]
