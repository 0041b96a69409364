"""Issue 40's acceptance for secrets: every form of the planted corpus (>= 150 forms, prose,
chat, tables, commit messages, file names and provider pairs included) never reaches a byte
under CHINVEX_HOME nor a `chinvex export` file.

Each vehicle gets every form, from its own seed (so a leak names its vehicle): a repository
file, a note, a ChatGPT chat exported as Markdown, a Claude Code session, Codex sessions (a
session's title is its first message), MCP `recall_add`, `flight_recorder_log`,
`recall_feedback` notes, `recall_search` queries (which the flight recorder logs) and
`chinvex search` queries. The real CLI ingests, the real MCP server is driven by the official
client over stdio, then every file under CHINVEX_HOME is read as raw bytes (hybrid.db with its
WAL, Chroma's files, context.json, logs) and the context is exported and the export read.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from helpers import FIXTURES, assert_no_traceback, run_cli
from mcp import Client
from secret_corpus import Planted, every_form
from test_secrets_never_stored import ROLLOUT, _all_bytes, _call, _mcp_session, _needles

TRANSCRIPT = (FIXTURES / "claude-code" / "codemie-code" / "projects" / "-tmp-private"
              / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")
FIRST_MESSAGE = "Hello, Codex! Please explain what you do."
TEMPLATE_ID = "a1b2c3d4-e5f6-7890-abcd-ef1234567890"
VEHICLES = ("repo", "note", "chat", "claude", "codex", "recall_add", "flight_recorder",
            "feedback", "mcp_query", "cli_query")
FORMS_PER_CODEX_SESSION = 12


def _texts(items: list[Planted], limit: int) -> list[str]:
    """The items' texts joined into pieces of at most `limit` characters."""
    pieces: list[str] = []
    for item in items:
        if pieces and len(pieces[-1]) + len(item.text) + 2 <= limit:
            pieces[-1] += "\n\n" + item.text
        else:
            pieces.append(item.text)
    return pieces


def _chat_markdown(items: list[Planted]) -> str:
    turns = []
    for item in items:
        turns.append(f"# Me\n\n{item.text}\n---\n\n# ChatGPT\n\nNoted; rotate it after the test.\n---\n")
    head = ('---\ntitle: "Deploy credentials"\nconversation_id: "0b7e3f10-55aa-4c2b-9d41-'
            '7e0f3a2b6c12"\ncreate_time: "2024-03-05T18:02:11"\n---\n\n')
    return head + "\n".join(turns)


def _claude_session(folder: Path, items: list[Planted]) -> None:
    lines = TRANSCRIPT.read_text(encoding="utf-8").splitlines()
    first_user = next(i for i, line in enumerate(lines) if json.loads(line).get("type") == "user")
    record = json.loads(lines[first_user])
    record["message"]["content"] = "\n\n".join(item.text for item in items)
    lines[first_user] = json.dumps(record)
    project = folder / "projects" / "-tmp-private"
    project.mkdir(parents=True)
    (project / TRANSCRIPT.name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _codex_sessions(folder: Path, items: list[Planted]) -> int:
    template = ROLLOUT.read_text(encoding="utf-8")
    day = folder / "sessions" / "2026" / "05" / "12"
    day.mkdir(parents=True)
    groups = [items[i:i + FORMS_PER_CODEX_SESSION]
              for i in range(0, len(items), FORMS_PER_CODEX_SESSION)]
    for i, group in enumerate(groups):
        thread = str(uuid.UUID(int=0x2B2C3D4E5F6 + i))
        message = json.dumps("\n\n".join(item.text for item in group))[1:-1]
        text = template.replace(FIRST_MESSAGE, message).replace(TEMPLATE_ID, thread)
        (day / f"rollout-2026-05-12T11-00-{i:02d}-{thread}.jsonl").write_text(text, encoding="utf-8")
    return len(groups)


def _plant_sources(base: Path, forms: dict[str, list[Planted]]) -> dict[str, Path]:
    roots = {name: base / name for name in ("repo", "notes", "chat", "claude", "codex")}
    for folder in roots.values():
        folder.mkdir()
    (roots["repo"] / "docs").mkdir()
    (roots["repo"] / "docs" / "credentials.md").write_text(
        "# Credentials seen in the incident\n\n" + "\n\n".join(p.text for p in forms["repo"]) + "\n")
    (roots["notes"] / "runbook.md").write_text(
        "# Runbook\n\n" + "\n\n".join(p.text for p in forms["note"]) + "\n")
    (roots["chat"] / "ChatGPT-Deploy_credentials.md").write_text(_chat_markdown(forms["chat"]))
    _claude_session(roots["claude"], forms["claude"])
    _codex_sessions(roots["codex"], forms["codex"])
    return roots


def _create_context(roots: dict[str, Path], env: dict[str, str]) -> None:
    created = run_cli("context", "create", "Forms", "--repo", str(roots["repo"]), "--note-root",
                      str(roots["notes"]), "--chat-root", str(roots["chat"]), "--claude-sessions",
                      str(roots["claude"] / "projects"), "--codex-sessions", str(roots["codex"]),
                      "--json", env=env)
    assert created.code == 0, created
    config_path = Path(created.json["path"])
    config = json.loads(config_path.read_text())
    config["codex_appserver"] = {"mode": "off"}  # the rollout reader, with or without codex
    config_path.write_text(json.dumps(config, indent=2))


def _agent(forms: dict[str, list[Planted]]) -> Callable[[Client], Awaitable[dict[str, Any]]]:
    """An MCP session passing every form through each tool that stores what it gets."""
    async def agent(client: Client) -> dict[str, Any]:
        added = forms["recall_add"]
        item = await _call(client, "recall_add", type="decision",
                           title=f"Credentials: {added[0].text}"[:200],
                           content="\n\n".join(p.text for p in added),
                           tags=[p.text for p in added if len(p.text) <= 64 and "\n" not in p.text][:32])
        logged = forms["flight_recorder"]
        contents, rationales = _texts(logged[::2], 12_000), _texts(logged[1::2], 12_000)
        for i, content in enumerate(contents):
            await _call(client, "flight_recorder_log", type="decision", content=content,
                        rationale=rationales[i] if i < len(rationales) else "",
                        metadata={"note": logged[i].text, "pair": {"secret": logged[i].secret}})
        assert len(rationales) <= len(contents)
        for note in _texts(forms["feedback"], 12_000):
            await _call(client, "recall_feedback", item_id=item["id"], useful=True, context=note)
        for query in _texts(forms["mcp_query"], 4_000):
            await _call(client, "recall_search", query=query, limit=3)
        return {"item": item}

    return agent


def _leaks(raw: bytes, forms: dict[str, list[Planted]]) -> list[str]:
    """Every needle of every vehicle found in `raw` (lowercase needles in `raw` lowercased)."""
    lowered = raw.lower()
    wanted: dict[bool, dict[bytes, set[str]]] = {True: {}, False: {}}
    for vehicle, items in forms.items():
        for needle, what in _needles(items).items():
            wanted[needle.islower()].setdefault(needle, set()).add(f"{vehicle}: {what}")
    found: set[str] = set()
    for lower, needles in wanted.items():
        for needle in _contained(lowered if lower else raw, list(needles)):
            found |= needles[needle]
    return sorted(found)


PREFIX = 8
"""Bytes of a needle's start that `_contained` compares as one 64-bit integer."""


def _contained(haystack: bytes, needles: list[bytes]) -> list[bytes]:
    """The needles that occur in `haystack`, exactly as `needle in haystack` says, in one pass
    instead of one per needle (thousands of needles over megabytes): every 8-byte window of the
    haystack, read as an integer, is looked up among the needles' first 8 bytes, and only the
    needles whose start is found at a position are compared there in full."""
    import numpy as np

    short = [n for n in needles if len(n) < PREFIX]
    found = [n for n in short if n in haystack]
    long = [n for n in needles if len(n) >= PREFIX]
    if not long or len(haystack) < PREFIX:
        return found
    data = np.frombuffer(haystack, dtype=np.uint8)
    windows = len(haystack) - PREFIX + 1
    keys = np.zeros(windows, dtype=np.uint64)
    for i in range(PREFIX):
        keys |= data[i:i + windows].astype(np.uint64) << np.uint64(8 * i)
    by_start: dict[int, list[bytes]] = {}
    for needle in long:
        by_start.setdefault(int.from_bytes(needle[:PREFIX], "little"), []).append(needle)
    starts = np.fromiter(by_start, dtype=np.uint64, count=len(by_start))
    hits: set[bytes] = set()
    for position in np.flatnonzero(np.isin(keys, starts)).tolist():
        for needle in by_start[int(keys[position])]:
            if needle not in hits and haystack.startswith(needle, position):
                hits.add(needle)
    return found + sorted(hits)


def test_every_form_never_reaches_a_file_under_chinvex_home_or_an_export(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"CHINVEX_HOME": str(home)}
    forms = {vehicle: every_form(seed=4000 + i) for i, vehicle in enumerate(VEHICLES)}
    assert len({p.form for p in forms["repo"]}) >= 150

    roots = _plant_sources(tmp_path, forms)
    _create_context(roots, env)
    ingested = run_cli("ingest", "--context", "Forms", "--json", env=env)
    assert_no_traceback(ingested)
    assert ingested.code == 0, ingested
    assert ingested.json["sources"]["indexed"] >= 5, ingested.json["sources"]
    assert sum(ingested.json["redactions"].values()) >= 5 * 150, ingested.json["redactions"]

    for query in _texts(forms["cli_query"], 4_000):
        searched = run_cli("search", "--context", "Forms", query, "--json", env=env)
        assert searched.code == 0, searched
    session = _mcp_session_for(home, tmp_path, _agent(forms))
    assert session["item"]["redactions"], "recall_add replaced nothing"

    export = tmp_path / "export.jsonl"
    exported = run_cli("export", "--context", "Forms", "--out", str(export), env=env)
    assert exported.code == 0, exported
    assert export.stat().st_size > 10_000 and b"[REDACTED:" in export.read_bytes()

    raw, files = _all_bytes(home)
    assert any(f.endswith("hybrid.db") for f in files) and any("chroma" in f for f in files), files
    for where, data in (("CHINVEX_HOME", raw), ("the export", export.read_bytes())):
        found = _leaks(data, forms)
        assert found == [], f"secrets found in {where}: {found}"


def _mcp_session_for(home: Path, cwd: Path, body: Any) -> Any:
    """`_mcp_session` of the sibling test, on this test's context."""
    return _mcp_session(home, cwd, body, context="Forms")
