"""MCP `chinvex_blame` through the official MCP client against `chinvex mcp`, on a git repository
whose history is made by replaying two real Codex rollouts (tests/fixtures/samples/codex-rollout/
generated-0.169.0/apply-patch): the first adds net/retry.py with `*** Add File`, the second adds
jitter with `*** Update File`; each is committed a minute after its session, and a person then
commits two lines no session wrote. The tool must name the session behind each line, agree with
`chinvex blame --json`, fail cleanly on bad input, and keep the default tools/list small."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from helpers import FIXTURES, git, init_repo, run_cli_in_process
from mcp_harness import World, _cli, call, call_error, run_session

SESSIONS = FIXTURES / "codex-rollout/generated-0.169.0/apply-patch/sessions/2026/11/28"
FIRST = "01a2240a-5ee5-7170-a256-a40cba21d208"
"""Adds net/retry.py: the docstring, `import time` and the helper `with_backoff`."""
SECOND = "01a2240a-7629-7143-95ba-74722ae2ab78"
"""Adds jitter: `import random`, and the two lines computing and sleeping the delay."""
BIG_LINES = 1000


# -- replaying the rollouts -----------------------------------------------------------------------

def _rollout(session_id: str) -> tuple[datetime, list[str]]:
    """The session's start time and the patch text of each of its apply_patch calls."""
    path = next(SESSIONS.glob(f"rollout-*-{session_id}.jsonl"))
    started, patches = None, []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        payload = record.get("payload") or {}
        if record.get("type") == "session_meta":
            started = datetime.fromisoformat(payload["timestamp"].replace("Z", "+00:00"))
        elif (record.get("type") == "response_item" and payload.get("type") == "custom_tool_call"
              and payload.get("name") == "apply_patch"):
            patches.append(payload["input"])
    assert started is not None and patches, path
    return started, patches


def _apply_patch(repo: Path, patch: str) -> None:
    """Codex's apply_patch format, as much of it as the two rollouts use: `*** Add File` (every
    line `+`) and `*** Update File` with `@@` hunks of context, `-` and `+` lines."""
    lines = patch.splitlines()
    assert lines[0] == "*** Begin Patch" and lines[-1] == "*** End Patch", patch
    i = 1
    while i < len(lines) - 1:
        header = lines[i]
        i += 1
        body = []
        while i < len(lines) - 1 and not lines[i].startswith("*** "):
            body.append(lines[i])
            i += 1
        if header.startswith("*** Add File: "):
            target = repo / header.removeprefix("*** Add File: ")
            target.parent.mkdir(parents=True, exist_ok=True)
            assert all(b.startswith("+") for b in body), body
            target.write_text("".join(b[1:] + "\n" for b in body), encoding="utf-8")
        elif header.startswith("*** Update File: "):
            target = repo / header.removeprefix("*** Update File: ")
            text = target.read_text(encoding="utf-8").splitlines()
            hunks: list[list[str]] = []
            for b in body:
                if b.startswith("@@"):
                    hunks.append([])
                else:
                    hunks[-1].append(b)
            for hunk in hunks:
                old = [h[1:] for h in hunk if h[:1] in (" ", "-")]
                new = [h[1:] for h in hunk if h[:1] in (" ", "+")]
                at = next(k for k in range(len(text) - len(old) + 1) if text[k:k + len(old)] == old)
                text[at:at + len(old)] = new
            target.write_text("".join(t + "\n" for t in text), encoding="utf-8")
        else:
            raise AssertionError(f"unexpected patch header {header!r}")


@pytest.fixture(scope="module")
def blamed(tmp_path_factory) -> World:
    base = tmp_path_factory.mktemp("mcp_blame")
    repo = base / "work"
    init_repo(repo)
    first_at, _ = _rollout(FIRST)
    (repo / "README.md").write_text("# work\n\nNetwork helpers.\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Start", when=first_at - timedelta(hours=1), author="Person")
    messages = {FIRST: "Add retry helper", SECOND: "Jitter for the backoff"}
    for session_id in (FIRST, SECOND):
        started, patches = _rollout(session_id)
        for patch in patches:
            _apply_patch(repo, patch)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", messages[session_id], when=started + timedelta(minutes=1))
    retry = repo / "net" / "retry.py"
    retry.write_text(retry.read_text(encoding="utf-8") + "\n\n# tuned by hand after the outage\nMAX_ATTEMPTS = 6\n",
                     encoding="utf-8")
    (repo / "net" / "table.py").write_text("".join(f"ROW_{n} = {n}\n" for n in range(1, BIG_LINES + 1)),
                                           encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Max attempts; a table", when=first_at + timedelta(hours=1), author="Person")
    world = World(home=base / "home", repo=repo, other=base / "none", outside=base / "none")
    _cli(world, "context", "create", "netlib", "--sessions", f"codex={SESSIONS}", "--repo", str(repo))
    _cli(world, "ingest", "--context", "netlib")
    return world


def _lines_of(text: str) -> dict[str, int]:
    return {line.strip(): n for n, line in enumerate(text.splitlines(), start=1) if line.strip()}


def _session(world: World, body, *args: str, **env: str) -> Any:
    """A server started in the repository with no --context and no CHINVEX_CONTEXT: the tool
    finds the context from the file (the default profile unless `env` says otherwise)."""
    return run_session(world, body, args=("mcp", *args), env={"CHINVEX_CONTEXT": "", "CHINVEX_MCP_TOOLS": "",
                                                               **env})


def _ids(result: dict[str, Any]) -> dict[str, str]:
    """doc_id -> session_id of the sessions in a result."""
    return {s["doc_id"]: s["session_id"] for s in result["sessions"]}


def _expand(ranges: str) -> list[int]:
    """"1-3,5" -> [1, 2, 3, 5]."""
    out: list[int] = []
    for part in filter(None, ranges.split(",")):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def _owners(result: dict[str, Any]) -> dict[int, list[str]]:
    ids = _ids(result)
    return {entry["line"]: [ids[d] for d in entry["sessions"]] for entry in result["lines"]}


# -- the tests --------------------------------------------------------------------------------

def test_names_the_session_behind_the_helper_and_the_jitter_lines(blamed):
    where = _lines_of((blamed.repo / "net" / "retry.py").read_text(encoding="utf-8"))
    helper = where["def with_backoff(call, attempts=4, base_delay=0.25):"]
    jitter = where["delay = base_delay * 2 ** attempt"]
    sleep = where["time.sleep(delay + random.uniform(0, delay / 2))"]
    by_hand = where["MAX_ATTEMPTS = 6"]

    async def body(client: Client):
        helper_lines = await call(client, "chinvex_blame", path="net/retry.py", lines=f"{helper}-{helper + 6}")
        jitter_lines = await call(client, "chinvex_blame", path=str(blamed.repo / "net" / "retry.py"),
                                  lines=f"{jitter}-{sleep}")
        one = await call(client, "chinvex_blame", path=f"net/retry.py:{where['import random']}")
        whole = await call(client, "chinvex_blame", path="net/retry.py", context="netlib")
        return helper_lines, jitter_lines, one, whole

    helper_lines, jitter_lines, one, whole = _session(blamed, body)
    assert helper_lines["context"] == "netlib"  # found from the file: the server has no default
    assert helper_lines["path"] == str(blamed.repo / "net" / "retry.py")
    assert helper_lines["repository"] == str(blamed.repo)
    assert [s["session_id"] for s in helper_lines["sessions"]] == [FIRST]
    owners = _owners(helper_lines)
    assert owners[helper] == [FIRST] and owners[helper + 1] == [FIRST]  # def, and its for loop
    first = helper_lines["sessions"][0]
    assert first["agent"] == "codex"
    assert first["request"]["text"] == "Add a helper that retries flaky network calls with exponential backoff"
    assert first["request"]["chunk_id"] in first["chunk_ids"]
    assert helper_lines["commits"][helper_lines["lines"][0]["commit"]]["subject"] == "Add retry helper"

    assert [s["session_id"] for s in jitter_lines["sessions"]] == [SECOND]
    assert _owners(jitter_lines) == {jitter: [SECOND], sleep: [SECOND]}
    assert "jitter" in jitter_lines["sessions"][0]["request"]["text"]
    assert jitter_lines["lines"][0]["text"] == "delay = base_delay * 2 ** attempt"  # trimmed
    assert {c["subject"] for c in jitter_lines["commits"].values()} == {"Jitter for the backoff"}

    assert one["first"] == one["last"] == where["import random"]  # `path:N` read as a line
    assert _owners(one) == {where["import random"]: [SECOND]}

    assert _owners(whole)[by_hand] == [] and by_hand in _expand(whole["unexplained"])
    assert set(_ids(whole).values()) == {FIRST, SECOND}
    assert "cut" not in whole and whole["first"] == 1 and whole["last"] == len(whole["lines"])


def test_agrees_with_chinvex_blame_json(blamed):
    retry = blamed.repo / "net" / "retry.py"
    total = len(retry.read_text(encoding="utf-8").splitlines())

    async def body(client: Client):
        return await call(client, "chinvex_blame", path="net/retry.py", lines=f"1-{total}")

    mcp = _session(blamed, body)
    done = run_cli_in_process("blame", f"{retry}:1-{total}", "--json",
                              env=blamed.env(CHINVEX_CONTEXT=""), cwd=blamed.repo)
    assert done.code == 0, done
    cli = done.json
    assert (mcp["context"], mcp["path"], mcp["first"], mcp["last"]) == \
        (cli["context"], cli["path"], cli["first"], cli["last"])
    assert len(mcp["lines"]) == len(cli["lines"]) == total
    for ours, theirs in zip(mcp["lines"], cli["lines"], strict=True):
        assert ours["line"] == theirs["line"]
        assert ours["text"] == theirs["text"].strip()
        assert ours["sessions"] == theirs["sessions"], ours["line"]
        assert theirs["commit"]["sha"].startswith(ours["commit"])
        assert mcp["commits"][ours["commit"]]["subject"] == theirs["commit"]["subject"]
    keys = ("doc_id", "session_id", "agent", "title", "time", "line_count", "request", "around", "chunk_ids")
    assert [{k: s[k] for k in keys} for s in mcp["sessions"]] == [{k: s[k] for k in keys} for s in cli["sessions"]]
    assert [_expand(s["lines"]) for s in mcp["sessions"]] == [s["lines"] for s in cli["sessions"]]
    assert {s["session_id"] for s in cli["sessions"]} == {FIRST, SECOND}
    assert _expand(mcp["unexplained"]) == cli["unexplained"] and cli["unexplained"]


def test_bad_input_is_a_clean_tool_error(blamed):
    async def body(client: Client):
        return {
            "missing": await call_error(client, "chinvex_blame", "NOT_FOUND", path="net/nope.py"),
            "folder": await call_error(client, "chinvex_blame", "INVALID_ARGUMENT", path="net"),
            "reversed": await call_error(client, "chinvex_blame", "INVALID_ARGUMENT", path="net/retry.py",
                                         lines="9-3"),
            "words": await call_error(client, "chinvex_blame", "INVALID_ARGUMENT", path="net/retry.py",
                                      lines="nine"),
            "past_end": await call_error(client, "chinvex_blame", "INVALID_ARGUMENT", path="net/retry.py",
                                         lines="500"),
            "empty": await call_error(client, "chinvex_blame", "INVALID_ARGUMENT", path="  "),
            "no_path": await call_error(client, "chinvex_blame", "INVALID_ARGUMENT"),
            "context": await call_error(client, "chinvex_blame", "CONTEXT_NOT_FOUND", path="net/retry.py",
                                        context="nope"),
        }

    errors = _session(blamed, body)
    assert str(blamed.repo / "net" / "nope.py") in errors["missing"]
    assert "relative path" in errors["missing"]
    assert "folder" in errors["folder"]
    assert "N-M" in errors["reversed"] and "N-M" in errors["words"]
    assert "past its end" in errors["past_end"]
    assert "path" in errors["no_path"] and "nope" in errors["context"]
    assert all("Traceback" not in m and len(m) < 500 for m in errors.values()), errors


def test_a_long_file_is_cut_at_400_lines_and_says_what_to_ask_next(blamed):
    async def body(client: Client):
        head = await call(client, "chinvex_blame", path="net/table.py")
        tail = await call(client, "chinvex_blame", path="net/table.py", lines="801-2000")
        return head, tail

    head, tail = _session(blamed, body)
    assert (head["first"], head["last"], len(head["lines"])) == (1, 400, 400)
    assert "lines=401-800" in head["cut"] and f"of {BIG_LINES}" in head["cut"]
    assert head["lines"][0] == {"line": 1, "text": "ROW_1 = 1", "commit": head["lines"][0]["commit"], "sessions": []}
    assert head["sessions"] == [] and head["unexplained"] == "1-400"
    assert (tail["first"], tail["last"], len(tail["lines"])) == (801, BIG_LINES, 200) and "cut" not in tail


def test_default_tool_list_has_chinvex_blame_under_4000_characters(blamed):
    from chinvex.mcp.profiles import CORE

    async def body(client: Client):
        return await client.list_tools()

    listed = _session(blamed, body)
    names = [t.name for t in listed.tools]
    assert names == list(CORE) and "chinvex_blame" in names
    dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
    size = len(json.dumps(dumped, separators=(",", ":")))
    assert size < 4000, size
    blame = next(t for t in listed.tools if t.name == "chinvex_blame")
    assert "\n" not in blame.description and len(blame.description) <= 150
    assert blame.input_schema["required"] == ["path"]
    assert set(blame.input_schema["properties"]) == {"path", "lines", "context"}
    assert blame.annotations is not None and blame.annotations.read_only_hint is True


def test_recall_context_gives_the_recent_session_history_and_who_wrote_the_file(blamed):
    """`recall_context`'s recent changes hold the sessions and commits of the file's repository
    (newest first, with each session's request and edited files), and its ownership the git
    authors and agent sessions behind the file's lines (chinvex blame)."""
    async def body(client: Client):
        return await call(client, "recall_context", file_path="net/retry.py",
                          context_types=["recent_changes", "ownership"])

    result = _session(blamed, body, CHINVEX_CONTEXT="netlib", CHINVEX_MCP_TOOLS="all")
    recent = result["recent_sessions"]
    kinds = [(e["kind"], e.get("session_id") or e["subject"]) for e in recent]
    # commits are dated a minute after their session began: both sessions precede both commits
    assert kinds == [("commit", "Max attempts; a table"), ("commit", "Jitter for the backoff"),
                     ("commit", "Add retry helper"), ("session", SECOND), ("session", FIRST), ("commit", "Start")]
    second = recent[3]
    assert second["agent"] == "codex" and "jitter" in second["first_request"]
    assert second["files_edited"] == ["/home/dev/run3/work/net/retry.py"]
    owners = result["ownership"]
    assert owners["authors"]["Dev"] > 0 and owners["authors"]["Person"] > 0
    assert [s["session_id"] for s in owners["sessions"]] == [FIRST, SECOND]
    assert owners["lines_no_session_explains"] >= 1  # the person's MAX_ATTEMPTS line
