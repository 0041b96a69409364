"""Conversation messages render as the markdown they were written in (issue 41), safely: raw HTML
stays text, script links are not links, images are not fetched, code stays monospace and
unmarked, query words are marked in prose; search hits of sessions are labelled by title, agent,
date and turns numbered from 1 (chinvex.web.links)."""

from __future__ import annotations

from chinvex.web.highlight import Highlighter
from chinvex.models.turn_markers import turns_label
from chinvex.web.links import where
from chinvex.web.markdown import MAX_CHARS, render_message


def _render(text: str, terms: list[str] | None = None) -> str:
    with Highlighter(terms or []) as highlight:
        return str(render_message(text, highlight))


def test_markdown_is_rendered_and_code_stays_monospace():
    html = _render("**Fixed** the `retry()` loop:\n\n```python\nretry(3)\n```\n\n- one\n- two\n")
    assert "<strong>Fixed</strong>" in html and "<code>retry()</code>" in html
    assert '<pre><code class="language-python">retry(3)\n</code></pre>' in html
    assert "<li>one</li>" in html


def test_html_scripts_links_and_images_from_a_message_are_inert():
    html = _render('<script>alert(1)</script> <img src=x onerror=alert(1)>\n\n'
                   '[click](javascript:alert(1)) [ok](https://example.org/a?b=1&c=2) ![t](https://evil.example/t.png)')
    assert "<script" not in html and "<img" not in html and "&lt;script&gt;" in html
    assert 'href="javascript' not in html and "javascript:alert(1)" in html  # shown as text
    assert '<a href="https://example.org/a?b=1&amp;c=2">ok</a>' in html


def test_query_words_are_marked_in_prose_but_not_in_code():
    html = _render("The retries failed.\n\n```\nretries = 3\n```", ["retry"])
    assert "The <mark>retries</mark> failed." in html
    assert "retries = 3" in html and "<mark>retries</mark> = 3" not in html


def test_a_huge_message_is_plain_escaped_text():
    html = _render("<b>x</b> " * (MAX_CHARS // 8 + 10))
    assert html.startswith('<pre class="text">') and "&lt;b&gt;" in html and "<b>" not in html


def test_session_hits_number_turns_from_one_as_the_chunk_shows_them():
    text = "[Turn 4 of 9] user:\nwhy?\n\n[Turn 5 of 9] assistant:\nbecause"
    meta = {"turn_start": 3, "turn_end": 4, "path": "s.jsonl"}
    assert turns_label(meta, text) == "turns 4-5"
    assert turns_label({"turn_start": 6}, "") == "turn 7"  # no markers: the stored 0-based index + 1
    assert turns_label({"path": "a.py"}, "x") == ""
    assert where(meta, "/x/s.jsonl", None, None, text) == "s.jsonl turns 4-5"
