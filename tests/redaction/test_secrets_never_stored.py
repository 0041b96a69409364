"""Issue 16's acceptance for secrets: planted secrets never reach a byte under CHINVEX_HOME.

Secrets of every planted kind (tests/secret_corpus.py) are put where an agent's user puts them:
the first message of Codex sessions (a session's title is its first message), file names, the
text of a note, MCP `recall_add` (title, content, tags, related files), `flight_recorder_log`
(content, rationale, metadata, related files), `recall_feedback` notes and the queries of
`recall_search` (which logs them) and `chinvex search`. Then the real CLI ingests, the real MCP
server is driven by the official client over stdio, and every file under CHINVEX_HOME is read
as raw bytes (hybrid.db with its WAL, Chroma's files, lock notes, context.json), and so is a
`chinvex export` of the context: no secret, no start of one a title cut could leave, and no
search term made of one may be found there.

The test also checks that each path was really taken (documents, items, entries and logged
queries exist, and markers stand where the secrets were), so it cannot pass by storing nothing.
"""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from helpers import CHINVEX_BIN, FIXTURES, assert_no_traceback, run_cli
from secret_corpus import CORPUS_KINDS, Planted, planted

ROLLOUT = FIXTURES / "codex-rollout/public/codemie-code/incremental/turn-1.jsonl"
FIRST_MESSAGE = "Hello, Codex! Please explain what you do."
TEMPLATE_ID = "a1b2c3d4-e5f6-7890-abcd-ef1234567890"


def _one_per_kind(seed: int) -> list[Planted]:
    """One secret of every kind, each in one context, different for every vehicle (seed)."""
    items = planted(seed=seed, per_kind=len(CORPUS_KINDS))
    return [item for i, item in enumerate(items) if i % len(CORPUS_KINDS) == CORPUS_KINDS.index(item.kind)]


def _needles(items: list[Planted]) -> dict[bytes, str]:
    """What must not be found, mapped to what it is: each secret (and each other secret that
    goes with it); the start of it a title cut could leave; each line of a PEM body; and,
    lowercased, each long run of letters and digits in it (how FTS5 would store it as a search
    term)."""
    out: dict[bytes, str] = {}
    for item in items:
        name = item.form or item.kind
        for secret in (item.secret, *item.others):
            out[secret.encode()] = name
            # A JWT's header is the same for every token signed with its algorithm (a preview
            # cut inside it holds nothing of the token): its payload and signature identify it.
            own = secret.split(".", 1)[1] if item.kind == "jwt" else secret
            if len(own) > 24:
                out[own[:20].encode()] = f"{name} (its start)"
            for line in own.splitlines():
                if len(line) >= 16 and not line.startswith("-----"):
                    out[line.encode()] = f"{name} (a line)"
            for run in re.findall(r"[A-Za-z0-9]{16,}", own):
                out[run.lower().encode()] = f"{name} (as a search term)"
    return out


def _write_rollouts(folder: Path, items: list[Planted]) -> None:
    template = ROLLOUT.read_text(encoding="utf-8")
    assert FIRST_MESSAGE in template and TEMPLATE_ID in template
    day = folder / "sessions" / "2026" / "05" / "12"
    day.mkdir(parents=True)
    for i, item in enumerate(items):
        thread = str(uuid.UUID(int=0x1B2C3D4E5F6 + i))
        message = json.dumps(item.text)[1:-1]  # as it stands inside the JSON string
        text = template.replace(FIRST_MESSAGE, message).replace(TEMPLATE_ID, thread)
        (day / f"rollout-2026-05-12T10-00-{i:02d}-{thread}.jsonl").write_text(text, encoding="utf-8")


def _file_name(item: Planted) -> str | None:
    """A file name holding the secret as people name files (`prod-<token>.md`,
    `password=<pw>.md`), or None when the secret cannot be in a name (a `/`, a line break)."""
    if item.kind == "password_in_url" or "/" in item.secret or "\n" in item.secret \
            or len(item.secret) > 200:
        return None
    stem = {"password_assignment": f"password={item.secret}",
            "secret_assignment": f"API_KEY={item.secret}",
            "auth_header": f"Authorization: Bearer {item.secret}"}.get(item.kind, f"prod-{item.secret}")
    return f"{stem}.md"


def _all_bytes(home: Path) -> tuple[bytes, list[str]]:
    files = sorted(p for p in home.rglob("*") if p.is_file())
    return b"\n".join(p.read_bytes() for p in files), [str(p.relative_to(home)) for p in files]


def _mcp_session(home: Path, cwd: Path, body: Any, context: str = "Leaky") -> Any:
    async def main() -> Any:
        params = StdioServerParameters(
            command=str(CHINVEX_BIN), args=["mcp", "--context", context], cwd=str(cwd),
            env={"CHINVEX_HOME": str(home), "ANONYMIZED_TELEMETRY": "False", "CHINVEX_MCP_TOOLS": "all"})
        async with Client(params, mode="legacy", read_timeout_seconds=300) as client:
            return await body(client)

    return anyio.run(main)


async def _call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, (tool, result.content[0].text if result.content else result)
    return result.structured_content


def _plant_sources(tmp_path: Path, titles: list[Planted], names: list[Planted], note: list[Planted],
                   ) -> tuple[Path, Path, list[tuple[Planted, str]]]:
    """Codex rollouts titled by planted secrets, notes named by them, and one note holding them;
    returns the two folders and the (item, file name) pairs that could be used as names."""
    codex = tmp_path / "codex"
    _write_rollouts(codex, titles)
    notes = tmp_path / "notes"
    notes.mkdir()
    named = [(item, _file_name(item)) for item in names]
    named = [(item, name) for item, name in named if name is not None]
    assert len(named) >= 20
    for item, name in named:
        (notes / name).write_text("Rotation checklist for the quokka deploy: renew, test, "
                                  "record.\n", encoding="utf-8")
    (notes / "runbook.md").write_text(
        "# Quokka staging runbook\n\nWhat the env held when the deploy broke:\n\n"
        + "\n\n".join(item.text for item in note) + "\n", encoding="utf-8")
    return codex, notes, named


def _create_context(codex: Path, notes: Path, env: dict[str, str]) -> None:
    """Context "Leaky" over both folders, reading Codex rollouts (with or without codex)."""
    created = run_cli("context", "create", "Leaky", "--codex-sessions", str(codex),
                      "--note-root", str(notes), "--json", env=env)
    assert created.code == 0, created
    config_path = Path(created.json["path"])
    config = json.loads(config_path.read_text())
    config["codex_appserver"] = {"mode": "off"}  # the rollout reader, with or without codex
    config_path.write_text(json.dumps(config, indent=2))


def _agent(added: list[Planted], logged: list[Planted], queries: list[Planted],
           ) -> Callable[[Client], Awaitable[dict[str, Any]]]:
    """An MCP session that passes planted secrets through every tool that stores what it gets."""
    async def agent(client: Client) -> dict[str, Any]:
        item = await _call(
            client, "recall_add", type="decision",
            title=f"Staging credentials: {added[0].text}"[:200],
            content="\n".join(i.text for i in added),
            tags=[i.text for i in added if len(i.text) <= 64 and "\n" not in i.text][:16],
            related_files=[f"/srv/app/{name}" for name in map(_file_name, added) if name])
        entry = await _call(
            client, "flight_recorder_log", type="decision",
            content="\n".join(i.text for i in logged[:13]),
            rationale="\n".join(i.text for i in logged[13:]),
            metadata={"env": {"GITHUB_TOKEN": logged[2].secret, "DB_PASSWORD": logged[-3].secret},
                      "note": logged[0].text},
            related_files=[f"config/{name}" for name in map(_file_name, logged) if name])
        for q in queries:
            await _call(client, "recall_search", query=q.text[:2000], limit=3)
        await _call(client, "recall_feedback", item_id=item["id"], useful=True,
                    context=logged[1].text)
        found = await _call(client, "recall_search", query="staging credentials decision", limit=5)
        return {"item": item, "entry": entry, "found": found}

    return agent


def _assert_every_path_was_taken(db: Path, titles: list[Planted], named: list[tuple[Planted, str]],
                                 queries: list[Planted]) -> None:
    """The rows exist, and hold markers where the secrets were."""
    with sqlite3.connect(db) as conn:
        count = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        assert count("SELECT count(*) FROM documents WHERE source_type='codex_session'") == len(titles)
        assert count("SELECT count(*) FROM documents WHERE title LIKE '%[REDACTED:%'") >= len(titles)
        assert count("SELECT count(*) FROM documents WHERE source_uri LIKE '%[REDACTED:%@%'") == len(named)
        assert count("SELECT count(*) FROM knowledge_items WHERE tags_json LIKE '%[REDACTED:%'") == 1
        assert count("SELECT count(*) FROM flight_recorder WHERE type='retrieval_query'") >= len(queries)
        assert count("SELECT count(*) FROM flight_recorder WHERE metadata_json LIKE '%[REDACTED:%'") >= 1
        assert count("SELECT count(*) FROM feedback WHERE context LIKE '%[REDACTED:%'") == 1
        assert count("SELECT count(*) FROM source_fingerprints WHERE state_json IS NOT NULL") >= len(titles)


def test_planted_secrets_never_reach_a_file_under_chinvex_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"CHINVEX_HOME": str(home)}
    titles = _one_per_kind(seed=1)       # first message of a Codex session each
    names = _one_per_kind(seed=2)        # file names of notes
    note = _one_per_kind(seed=3)         # the text of one note
    added = _one_per_kind(seed=4)        # recall_add: content, title, tags, related files
    logged = _one_per_kind(seed=5)       # flight_recorder_log and recall_feedback
    queries = _one_per_kind(seed=6)      # recall_search and chinvex search queries
    everything = titles + names + note + added + logged + queries
    assert len({item.kind for item in everything}) == len(CORPUS_KINDS) >= 20

    codex, notes, named = _plant_sources(tmp_path, titles, names, note)
    _create_context(codex, notes, env)
    ingested = run_cli("ingest", "--context", "Leaky", "--json", env=env)
    assert_no_traceback(ingested)
    assert ingested.code == 0, ingested
    assert ingested.json["sources"]["indexed"] == len(titles) + len(named) + 1
    assert sum(ingested.json["redactions"].values()) >= len(titles) + len(note)

    for item in queries[:5]:
        searched = run_cli("search", "--context", "Leaky", item.text, "--json", env=env)
        assert searched.code == 0, searched

    session = _mcp_session(home, tmp_path, _agent(added, logged, queries))
    assert session["item"]["indexed"] is True, session["item"]
    assert session["item"]["redactions"], "recall_add replaced nothing"
    assert any(r["id"] == session["item"]["id"] for r in session["found"]["results"])

    _assert_every_path_was_taken(home / "indexes" / "Leaky" / "hybrid.db", titles, named, queries)

    export = tmp_path / "export.jsonl"
    exported = run_cli("export", "--context", "Leaky", "--out", str(export), env=env)
    assert exported.code == 0, exported
    assert b"[REDACTED:" in export.read_bytes()

    raw, files = _all_bytes(home)
    assert any(f.endswith("hybrid.db") for f in files) and any("chroma" in f for f in files), files
    for where, data in (("CHINVEX_HOME", raw), ("the export", export.read_bytes())):
        lowered = data.lower()
        found = sorted({what for needle, what in _needles(everything).items()
                        if needle in (lowered if needle.islower() else data)})
        assert found == [], f"secrets found in {where}: {found}"
