"""One huge chat message cannot stall an ingest (issue 40): a message over 256 KB is indexed up
to that size, with a marker saying how much was left out, and the run reports it. A real Claude
Code transcript whose first request is replaced by a 3 MB single-line paste, ingested for real.
(bench/message_cap.py times a 100 MB one.)"""

from __future__ import annotations

import json
import random
from pathlib import Path

from chinvex.ingest.prepare import MAX_MESSAGE_CHARS, cap_messages
from chinvex.models import ConversationDoc, Turn
from helpers import FIXTURES, run_cli

TRANSCRIPT = (FIXTURES / "claude-code" / "codemie-code" / "projects" / "-tmp-private"
              / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")


LOG_WORDS = (
    "error", "warning", "info", "debug", "request", "response", "timeout", "retry", "connection",
    "server", "client", "payload", "header", "status", "session", "token", "cache", "queue",
    "worker", "thread", "process", "memory", "buffer", "stream", "socket", "handler", "module",
    "package", "import", "export", "config", "value", "default", "option", "update", "delete",
    "insert", "select", "table", "index", "column", "record", "started", "finished", "failed",
    "closed", "opened", "user", "agent", "build",
)
"""The words of the paste: a log's vocabulary, a few characters a token (random letter strings
cost the embedder a token every two characters, several times the work for the same bytes)."""


def one_line_paste(chars: int, seed: int = 40) -> str:
    rnd = random.Random(seed)
    text = " ".join(rnd.choice(LOG_WORDS) for _ in range(chars // 6 + 1))
    return ("PASTED-LOG-START " + text)[:chars]


def test_cap_messages_cuts_only_what_is_over_and_says_so():
    doc = ConversationDoc(doc_id="d", thread_id="t", source="claude_code", source_type="agent_session",
                          source_uri="s.jsonl", turns=[Turn(turn_id="1", role="user", text="short"),
                                                      Turn(turn_id="2", role="assistant", text="y" * 5000)])
    capped, cut = cap_messages(doc, limit=1000)
    assert cut == 1 and capped.turns[0].text == "short"
    assert capped.turns[1].text.startswith("y" * 1000) and "4,000 more characters not indexed" in capped.turns[1].text
    assert capped.turns[1].meta["cut_from_chars"] == 5000 and doc.turns[1].text == "y" * 5000  # input untouched
    assert cap_messages(doc, limit=10_000) == (doc, 0)


def test_a_huge_pasted_message_is_indexed_up_to_the_cap(tmp_path: Path, chinvex_home: Path):
    project = tmp_path / "projects" / "-tmp-private"
    project.mkdir(parents=True)
    lines = TRANSCRIPT.read_text(encoding="utf-8").splitlines()
    first_user = next(i for i, line in enumerate(lines) if json.loads(line).get("type") == "user")
    record = json.loads(lines[first_user])
    record["message"]["content"] = one_line_paste(3_000_000)
    lines[first_user] = json.dumps(record)
    (project / TRANSCRIPT.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert run_cli("context", "create", "paste", "--claude-sessions", str(tmp_path / "projects")).code == 0
    result = run_cli("ingest", "--context", "paste", "--json")
    assert result.code == 0 and result.json["sources"]["indexed"] == 1, result
    assert any("over 256 KB indexed up to that size only" in w["message"] for w in result.json["warnings"]), result.json
    got = run_cli("get", TRANSCRIPT.stem, "--context", "paste", "--json").json
    assert got["turns"][0]["text"].startswith("PASTED-LOG-START")  # (`get` shows 20,000 characters a turn)
    marker = run_cli("search", "--context", "paste", "more characters not indexed", "--mode", "fts", "--json")
    hit = marker.json["results"][0]
    assert f"{3_000_000 - MAX_MESSAGE_CHARS:,} more characters not indexed" in hit["text"]
    stats = run_cli("stats", "--context", "paste", "--json").json
    assert stats["totals"]["chunks"] < 2 * MAX_MESSAGE_CHARS // 400  # the whole 3 MB paste would be ~2,400 chunks
