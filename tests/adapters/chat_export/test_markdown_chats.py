"""Markdown chat exports: pionxzh, convoviz, bold labels, role headings, broken front matter."""

from __future__ import annotations

from chinvex.ids import thread_doc_id
from chinvex.models import ConversationDoc, Document
from chat_export_support import MD, parse_path


def test_pionxzh_markdown_export():
    docs, report = parse_path(MD / "ChatGPT-Rust_lifetimes_in_iterators.md")
    (doc,) = docs
    assert isinstance(doc, ConversationDoc) and doc.source == "chat_markdown"
    assert doc.metadata["format"] == "pionxzh"
    # The conversation id comes from the `source:` URL, so the markdown copy and the JSON export
    # of the same conversation are one document.
    assert doc.thread_id == "6790a1b2-1c2d-8003-9e4f-0a1b2c3d4e5f"
    assert doc.doc_id == thread_doc_id("chat", doc.thread_id)
    assert doc.source_uri == str(MD / "ChatGPT-Rust_lifetimes_in_iterators.md")
    assert doc.title == "Rust lifetimes in iterators"
    assert [t.role for t in doc.turns] == ["user", "assistant", "user", "tool", "assistant", "assistant"]
    assert [t.turn_id for t in doc.turns] == ["md-1", "md-2", "md-3", "md-4", "md-6", "md-7"]
    user, thought = doc.turns[0], doc.turns[1]
    assert user.ts.isoformat() == "2025-01-22T09:14:03+00:00" and "<time" not in user.text
    assert [a.name for a in user.attachments] == ["windows.rs"]
    assert thought.meta["thinking"] and "<details>" not in thought.text
    assert "the borrow checker ties it to `&mut self`" in thought.text
    tool = doc.turns[3]
    assert tool.tool.name == "python" and "range(len(data) - 2)" in tool.text
    assert "[b'abc', b'bcd', b'cde', b'def']" in tool.text
    assert doc.turns[5].attachments[0].uri == "file-service://file-Rk2dLq8YtV5m3nP0wQ1aZx"
    assert doc.created_at.isoformat() == "2025-01-22T09:14:03+00:00"
    assert not report.warnings


def test_convoviz_markdown_export():
    docs, _ = parse_path(MD / "Postgres_vacuum_tuning.md")
    (doc,) = docs
    assert doc.metadata["format"] == "convoviz"
    assert doc.thread_id == "0b7e3f10-55aa-4c2b-9d41-7e0f3a2b6c11"
    assert [t.role for t in doc.turns] == ["system", "user", "assistant", "user", "assistant", "tool"]
    assert doc.title == "Postgres vacuum tuning"
    assert doc.created_at.isoformat() == "2024-03-05T18:02:11+00:00"
    assert doc.updated_at.isoformat() == "2024-03-05T18:40:57+00:00"
    answer = doc.turns[2].text
    assert "ALTER TABLE events SET" in answer and "# Me\nnot a heading here" in answer  # fenced
    assert not any(t.text.endswith("---") for t in doc.turns)
    assert all(t.ts == doc.created_at for t in doc.turns)  # no per-message times: the chat's


def test_bold_label_markdown_and_plain_markdown():
    docs, _ = parse_path(MD / "claude_ai_bold_labels.md")
    (doc,) = docs
    assert doc.metadata["format"] == "bold_labels" and doc.title == "Naming a CLI flag"
    assert [t.role for t in doc.turns] == ["user", "assistant", "user", "assistant"]
    assert doc.turns[1].text.startswith("Prefer `--dry-run`")
    assert doc.thread_id.startswith("md-")

    docs, _ = parse_path(MD / "meeting-notes.md")
    (plain,) = docs
    assert isinstance(plain, Document) and plain.source_type == "chat"
    assert plain.metadata["format"] == "plain_markdown"
    assert plain.title == "Q3 planning notes"
    assert plain.text == (MD / "meeting-notes.md").read_text()


def test_role_heading_markdown(tmp_path):
    path = tmp_path / "export.md"
    path.write_text("# Deploy question\n\n### User\n\nHow do I roll back?\n\n### Assistant\n\n"
                    "Run `kubectl rollout undo`.\n\n### User research\n\nnot a speaker heading\n")
    docs, _ = parse_path(path)
    (doc,) = docs
    assert doc.metadata["format"] == "role_headings" and doc.title == "Deploy question"
    assert [t.role for t in doc.turns] == ["user", "assistant"]
    assert doc.turns[1].text.endswith("### User research\n\nnot a speaker heading")


def test_markdown_with_broken_front_matter_still_parses(tmp_path):
    path = tmp_path / "chat.md"
    path.write_text("---\ntitle: [unclosed\n---\n\n## Prompt\n\nhow?\n\n## Response\n\nlike this\n")
    docs, report = parse_path(path)
    assert [t.role for t in docs[0].turns] == ["user", "assistant"]
    assert report.counts["front_matter_invalid"] == 1
