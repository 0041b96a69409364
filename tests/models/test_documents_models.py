"""The document models adapters produce (chinvex.models.documents): what they refuse, so that an
adapter's mistake fails where it is made instead of reaching the index, and the tables of source
types and roles that retrieval weighs them by."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from chinvex.models import ConversationDoc, Document, Turn
from chinvex.models.documents import (
    DEFAULT_WEIGHTS,
    ROLE_WEIGHTS,
    ROLES,
    SOURCE_TYPES,
    Attachment,
    agent_of,
)


def _conversation(**changes) -> dict:
    base = {"source": "claude_code", "source_type": "agent_session", "source_uri": "/s/a.jsonl",
            "doc_id": "d1", "thread_id": "t1", "turns": [{"turn_id": "1", "role": "user", "text": "hi"}]}
    return {**base, **changes}


def test_a_conversation_with_its_turns_validates():
    doc = ConversationDoc.model_validate(_conversation())
    assert doc.doc_type == "conversation" and doc.turns[0].role == "user"
    assert doc.links.repo_paths == [] and doc.metadata == {}


def test_documents_conversations_and_turns_refuse_fields_they_do_not_define():
    with pytest.raises(ValidationError, match="extra"):
        Document(doc_id="d", source_type="note", source_uri="/n.md", text="x", body="typo for text")
    with pytest.raises(ValidationError, match="extra"):
        ConversationDoc.model_validate(_conversation(agent="claude"))
    with pytest.raises(ValidationError, match="extra"):
        Turn(turn_id="1", role="user", text="x", speaker="me")


def test_an_attachment_keeps_what_a_tool_adds_about_it():
    attachment = Attachment(kind="image", name="shot.png", width=640)
    assert attachment.model_extra == {"width": 640}


def test_a_turn_role_and_a_conversation_source_are_closed_lists():
    with pytest.raises(ValidationError):
        Turn(turn_id="1", role="narrator")
    with pytest.raises(ValidationError):
        ConversationDoc.model_validate(_conversation(source="some_new_agent"))


def test_the_agent_of_a_conversation_names_the_tool_not_its_reader():
    assert agent_of("cx_appserver") == agent_of("cx_sessions_jsonl") == "codex"
    assert agent_of("chatgpt_export") == "chatgpt"
    assert agent_of("claude_code") == "claude_code"


def test_every_known_source_type_and_role_has_a_weight():
    assert set(SOURCE_TYPES) == set(DEFAULT_WEIGHTS)
    assert set(ROLES) == set(ROLE_WEIGHTS)
    assert all(0 < w <= 1 for w in [*DEFAULT_WEIGHTS.values(), *ROLE_WEIGHTS.values()])
