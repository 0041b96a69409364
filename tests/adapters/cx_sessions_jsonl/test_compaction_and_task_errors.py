"""Compaction summaries and errors carried by a task's end event, in Codex rollouts.

Real shapes read:
- `compacted` of a local compaction: `message` is Codex's fixed framing for the next model
  ("Another language model started to solve this problem ... assist with your own
  analysis:"), a line break, then the summary; `replacement_history` repeats the earlier user
  messages and the summary as the model's new context. Seen in the 0.169.0 paginated rollout
  (generated here by codex itself), where the compaction task's reply, the same summary, is a
  `response_item` assistant message.
- `compacted` of a remote compaction: `"message": ""` with window ids, the summary only
  encrypted in `replacement_history` (agent-sessions `small.jsonl`, MIT).
- `task_complete` with `"last_agent_message": null, "error": {"message", "codex_error_info"}`
  (agent-sessions `small.jsonl`), and an `error` event `{"message", "codex_error_info"}`.

The real files carry every assertion they can. Two situations no licensed file holds (a legacy
file's compaction task, and an error event followed by the end event repeating it) are
minimal files written here line by line in the shapes above, and say so.
"""

from __future__ import annotations

import json
from pathlib import Path

from rollout_support import AGENT_SESSIONS, PAGINATED, ROLLOUT_NAME, ev, meta_line, parse, ri, user_msg, write

FRAMING_START = "Another language model started to solve this problem"


def _records(path: Path) -> list[dict]:
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def _compacted(path: Path) -> list[dict]:
    return [r["payload"] for r in _records(path) if r.get("type") == "compacted"]


def _summary_of(turn) -> str:
    head = "Context compacted. Summary:\n"
    assert turn.text.startswith(head)
    return turn.text[len(head):]


# -- compaction summaries ------------------------------------------------------------------

def test_local_compaction_keeps_its_summary_without_the_framing() -> None:
    (payload,) = _compacted(PAGINATED)
    message = payload["message"]
    assert message.startswith(FRAMING_START)
    summary = message.split("\n", 1)[1].strip()  # what the model wrote, after Codex's framing
    doc, report = parse(PAGINATED)
    (turn,) = [t for t in doc.turns if t.meta.get("kind") == "compaction"]
    assert turn.role == "system" and turn.meta["compact_summary"] is True
    assert _summary_of(turn) == summary
    everything = "\n".join(t.text for t in doc.turns)
    assert FRAMING_START not in everything
    # the compaction task's reply is that summary: shown once, as the compaction turn
    assert everything.count(summary) == 1
    assert report.counts["compaction_summaries"] == 1


def test_replacement_history_adds_nothing(tmp_path: Path) -> None:
    """Without its `compacted` line the file gives the same turns but the compaction's own."""
    lines = PAGINATED.read_text(encoding="utf-8").splitlines()
    kept = [x for x in lines if json.loads(x).get("type") != "compacted"]
    assert len(kept) == len(lines) - 1
    history = _compacted(PAGINATED)[0]["replacement_history"]
    repeated = [c["text"] for item in history if item.get("role") == "user"
                for c in item["content"] if c.get("type") == "input_text"]
    assert repeated  # the earlier prompts, repeated for the model
    doc, _ = parse(PAGINATED)
    bare, _ = parse(write(tmp_path / PAGINATED.name, kept))

    def others(d):
        return [(t.role, t.text) for t in d.turns if t.meta.get("kind") != "compaction"]

    assert others(doc) == others(bare)
    for text in repeated:
        assert sum(text in t.text for t in doc.turns) == sum(text in t.text for t in bare.turns)


def test_every_compacted_line_of_a_real_mix_gives_its_summary_or_the_marker() -> None:
    path = AGENT_SESSIONS / "small.jsonl"
    messages = [p.get("message") or "" for p in _compacted(path)]
    assert "" in messages  # a remote compaction (window ids, summary encrypted)
    doc, report = parse(path)
    summaries = [t for t in doc.turns if t.meta.get("compact_summary")]
    assert sorted(_summary_of(t) for t in summaries) == sorted(m.strip() for m in messages if m.strip())
    assert all(t.role == "system" and t.meta["kind"] == "compaction" for t in summaries)
    markers = [t for t in doc.turns if t.meta.get("kind") == "compaction" and not t.meta.get("compact_summary")]
    assert markers and all(t.text == "Context compacted." for t in markers)
    assert report.counts["compactions"] == len(summaries) + len(markers)


def test_legacy_compaction_task_shows_its_summary_once(tmp_path: Path) -> None:
    """Minimal file written here (no licensed legacy file holds a compaction): the paginated
    rollout's compaction task (reply as `response_item`, then `compacted`) without ordinals
    or items, the way a legacy rollout writes it."""
    reply = "Progress: retry.py gets jitter; next: tests for with_backoff."
    framing = ("Another language model started to solve this problem and produced a summary of its "
               "thinking process. You also have access to the state of the tools that were used by "
               "that language model. Use this to build on the work that has already been done and "
               "avoid duplicating work. Here is the summary produced by the other language model, "
               "use the information in this summary to assist with your own analysis:")
    prompt = "Add jitter to with_backoff"
    lines = [meta_line(), ev("task_started", turn_id="t1"), *user_msg(prompt),
             ev("agent_message", message="Done."),
             ri("message", role="assistant", content=[{"type": "output_text", "text": "Done."}]),
             ev("task_complete", turn_id="t1", last_agent_message="Done."),
             ev("task_started", turn_id="t2"),
             ri("message", role="assistant", content=[{"type": "output_text", "text": reply}]),
             json.dumps({"timestamp": "2026-01-02T03:04:06.000Z", "type": "compacted",
                         "payload": {"message": framing + "\n" + reply,
                                     "replacement_history": [
                                         {"type": "message", "role": "user",
                                          "content": [{"type": "input_text", "text": prompt}]},
                                         {"type": "message", "role": "user",
                                          "content": [{"type": "input_text", "text": framing + "\n" + reply}]}]}}),
             ev("context_compacted"),
             ev("task_complete", turn_id="t2", last_agent_message=None)]
    doc, report = parse(write(tmp_path / ROLLOUT_NAME, lines))
    assert [(t.role, t.text) for t in doc.turns] == [
        ("user", prompt), ("assistant", "Done."), ("system", "Context compacted. Summary:\n" + reply)]
    assert report.counts["compaction_replies_skipped"] == 1


# -- errors on a task's end event ------------------------------------------------------------

def _task_end_errors(path: Path) -> list[dict]:
    return [r["payload"] for r in _records(path) if r.get("type") == "event_msg"
            and r["payload"].get("type") in ("task_complete", "turn_complete") and r["payload"].get("error")]


def test_task_complete_error_is_shown_like_an_error_event() -> None:
    path = AGENT_SESSIONS / "small.jsonl"
    (payload,) = _task_end_errors(path)
    assert payload["last_agent_message"] is None
    doc, _ = parse(path)
    (turn,) = [t for t in doc.turns if t.meta.get("on_task_end")]
    assert turn.role == "system" and turn.meta["kind"] == "error"
    assert turn.text == "Error: " + payload["error"]["message"]
    assert turn.meta["codex_error_info"] == payload["error"]["codex_error_info"]
    # the file's `error` event is shown the same way
    (event,) = [r["payload"] for r in _records(path) if r.get("type") == "event_msg"
                and r["payload"].get("type") == "error"]
    shown = [t for t in doc.turns if t.meta.get("kind") == "error" and not t.meta.get("on_task_end")]
    assert [t.text for t in shown] == ["Error: " + event["message"]]


def test_task_end_error_after_the_same_error_event_is_shown_once(tmp_path: Path) -> None:
    """Minimal file written here in the shapes of small.jsonl's `error` event and failed
    `task_complete`: Codex reports a failed turn with both."""
    error = {"message": "stream disconnected before completion: Transport error",
             "codex_error_info": "response_stream_disconnected"}
    other = {"message": "You've hit your usage limit.", "codex_error_info": "usage_limit_exceeded"}
    lines = [meta_line(), ev("task_started", turn_id="t1"), *user_msg("Refactor the parser"),
             ev("error", **error),
             ev("task_complete", turn_id="t1", last_agent_message=None, error=error),
             ev("task_started", turn_id="t2"), *user_msg("Try again"),
             ev("task_complete", turn_id="t2", last_agent_message=None, error=other)]
    doc, report = parse(write(tmp_path / ROLLOUT_NAME, lines))
    assert [(t.role, t.text) for t in doc.turns] == [
        ("user", "Refactor the parser"), ("system", "Error: " + error["message"]),
        ("user", "Try again"), ("system", "Error: " + other["message"])]
    assert "on_task_end" not in doc.turns[1].meta and doc.turns[3].meta["on_task_end"] is True
    assert report.counts["task_errors_already_shown"] == 1


def test_task_complete_without_error_adds_nothing() -> None:
    for path in (PAGINATED, AGENT_SESSIONS / "small.jsonl"):
        ends = [r for r in _records(path) if r.get("type") == "event_msg"
                and r["payload"].get("type") == "task_complete"]
        assert len(ends) > len(_task_end_errors(path))
        doc, _ = parse(path)
        assert len([t for t in doc.turns if t.meta.get("on_task_end")]) == len(_task_end_errors(path))
