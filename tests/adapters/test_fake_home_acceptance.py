"""Issue 36's acceptance, format by format, in one ingest.

A fake home holds the real samples of tests/fixtures/samples where each tool keeps them (Claude
Code, Codex, Gemini CLI's .json and .jsonl chats, Qwen Code, Copilot CLI, VS Code Copilot Chat's
.json and .jsonl sessions, the Cline SDK store, Roo Code task folders, OpenCode, pi, OpenClaw,
Kimi Code, Cursor, Amp), with the real claude.ai export (the older text-only shape; no
licensed real export of the `content[]` shape exists to copy) and a real ChatGPT export as chat
roots and a repository holding real Aider and SpecStory histories. Beside each real file lie a
cut copy of it and a file of the same name pattern in another shape. Then

    chinvex sessions detect --json             names every agent present and no other;
    chinvex context create X --sessions auto --chat-root ... --chat-root ... --repo ...
    chinvex ingest                              exits 0 without a traceback, says in one line why
                                                each damaged file was left out (or keeps the
                                                complete records of a cut log);
    chinvex export                              holds every real file's conversations with user
                                                and assistant turns and times.

tests/adapters/test_every_agent.py checks the same per agent; this test checks each file, so
that one format of an agent that reads two (Gemini's .json and .jsonl) cannot hide behind the
other, and adds the damaged files of every format to the same run."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from helpers import FIXTURES, assert_no_traceback, run_cli_in_process

S = FIXTURES
CODE_USER = Path(".config/Code/User")


@dataclass(frozen=True)
class Sample:
    label: str
    """The format, as the test's messages name it."""
    source: str
    """The `source` its conversations carry."""
    src: Path
    """A real file (or a session folder) of tests/fixtures/samples."""
    dest: Path
    """Where the tool keeps it, under the home folder (or the chat root / repository)."""
    damaged: tuple[tuple[str, str], ...] = ()
    """(file inside `src` to damage, or "" for `src` itself; how: "cut" or "shape"). A session
    folder is copied beside it with that file damaged."""


GEMINI_JSON = S / ("gemini_cli/entireio-cli/tmp/7e8989f71805c3147f6be9b7a71de2a156f8face69f9380beeeb8a777414f21c/"
                   "chats/session-2026-01-10T02-08-faff42ab.json")
GEMINI_JSONL = S / "gemini_cli/vibecodingtracker/tmp/discordbot/chats/session-2026-04-23T12-52-0ab84937.jsonl"
QWEN = S / ("qwen_code/hockeyscrapper/projects/c--users-user-se-toolkit-lab-8/chats/"
            "6af11f56-0827-497c-b897-6069305c5126.jsonl")
PI = S / ("pi/pi-mono/agent/sessions/--Users-user-workspaces-pi-mono--/"
          "2025-12-09T00-53-29-825Z_ffae836b-9420-4060-ac13-7745215f90ff.jsonl")
CODEX = next((S / "codex-rollout/generated-0.169.0/legacy/sessions").rglob("rollout-*.jsonl"))
KIMI = S / "kimi/agent-sessions/kimi-code/sessions/wd_project_ac3bb318f98e/session_1bcbe023-4f7e-4971-9dc9-43b8756045b0"
KIMI_CLI = S / ("kimi/kimi-cli-pr127/sessions/00d5060aaec3fda180930ea52304b87b/"
                "531d195b-6436-426e-b010-4bf723a992de.jsonl")
ROO = S / "cline/roo-jsboige-test-leaf-a1/tasks/b423bff7-6fec-40fe-a00e-bb2a0ebb52f4"
CLINE_TASK = S / "cline/cline-jasonleonardvolk-tori/saoudrizwan.claude-dev/tasks/1746979936610"
CLINE_SDK = S / "cline/cline-sdk-cline-repo/data/sessions/1784094124598_rruoq"
COPILOT_CLI = S / "copilot_cli/vibecodingtracker/session-state/96ef38f0-9d09-45c3-8124-6448c36090ed"
COPILOT_CHAT = S / "vscode_copilot/git-ai/chatSessions"
OPENCLAW = S / "openclaw/charbi-agent/agents/main/sessions/3cdaedd3-abab-40b6-9859-e6605dc1c2ca.jsonl"
AMP = S / "amp/empathic-toolpath/threads/T-019fa4db-29cf-70c9-8d9b-81524df70e52.json"
CURSOR = S / "cursor/microgptjs/chat-logs/02-readme-and-deployment.txt"
OPENCODE_PROJECT, OPENCODE_SESSION = "98f0326ae5594d769602840258229a7888e46ff5", "ses_539950424ffev4SAECXTZKSubM"
CLAUDE_CODE = S / "claude-code/codemie-code/projects/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"

HOME_SAMPLES = [
    Sample("Claude Code", "claude_code", CLAUDE_CODE, Path(".claude/projects/-tmp-private") / CLAUDE_CODE.name,
           (("", "cut"), ("", "shape"))),
    Sample("Codex rollout", "cx_sessions_jsonl", CODEX, Path(".codex/sessions/2026/11/22") / CODEX.name,
           (("", "cut"), ("", "shape"))),
    Sample("Gemini CLI .json", "gemini", GEMINI_JSON, Path(".gemini/tmp/7e8989f7/chats") / GEMINI_JSON.name,
           (("", "cut"), ("", "shape"))),
    Sample("Gemini CLI .jsonl", "gemini", GEMINI_JSONL, Path(".gemini/tmp/discordbot/chats") / GEMINI_JSONL.name,
           (("", "cut"), ("", "shape"))),
    Sample("Qwen Code", "qwen", QWEN, Path(".qwen/projects/c--users-user-se-toolkit-lab-8/chats") / QWEN.name,
           (("", "cut"), ("", "shape"))),
    Sample("Copilot CLI", "copilot_cli", COPILOT_CLI, Path(".copilot/session-state") / COPILOT_CLI.name,
           (("events.jsonl", "cut"), ("events.jsonl", "shape"))),
    Sample("VS Code Copilot Chat .json", "copilot_chat", COPILOT_CHAT / "331fed7f-cfd6-409c-8502-06a56322b636.json",
           CODE_USER / "workspaceStorage/0f1e2d3c/chatSessions/331fed7f-cfd6-409c-8502-06a56322b636.json",
           (("", "cut"), ("", "shape"))),
    Sample("VS Code Copilot Chat .jsonl", "copilot_chat", COPILOT_CHAT / "7de89a80-6d93-43e7-be0a-0a9afe980198.jsonl",
           CODE_USER / "workspaceStorage/0f1e2d3c/chatSessions/7de89a80-6d93-43e7-be0a-0a9afe980198.jsonl",
           (("", "cut"), ("", "shape"))),
    Sample("Cline SDK session", "cline", CLINE_SDK, Path(".cline/data/sessions") / CLINE_SDK.name,
           ((f"{CLINE_SDK.name}.messages.json", "cut"), (f"{CLINE_SDK.name}.messages.json", "shape"))),
    Sample("Cline task folder", "cline", CLINE_TASK,
           CODE_USER / "globalStorage/saoudrizwan.claude-dev/tasks" / CLINE_TASK.name,
           (("api_conversation_history.json", "cut"), ("api_conversation_history.json", "shape"))),
    Sample("Roo Code task folder", "roo", ROO, CODE_USER / "globalStorage/rooveterinaryinc.roo-cline/tasks" / ROO.name,
           (("api_conversation_history.json", "cut"), ("api_conversation_history.json", "shape"))),
    Sample("OpenCode storage", "opencode", S / "opencode/jwp23-dotfiles/storage-1.0.107/storage",
           Path(".local/share/opencode/storage")),  # its damaged sessions: _opencode_damage
    Sample("pi", "pi", PI, Path(".pi/agent/sessions/--Users-user-workspaces-pi-mono--") / PI.name,
           (("", "cut"), ("", "shape"))),
    Sample("OpenClaw", "openclaw", OPENCLAW, Path(".openclaw/agents/main/sessions") / OPENCLAW.name,
           (("", "cut"), ("", "shape"))),
    Sample("Kimi Code", "kimi", KIMI, Path(".kimi-code/sessions/wd_project_ac3bb318f98e") / KIMI.name,
           (("agents/main/wire.jsonl", "cut"), ("agents/main/wire.jsonl", "shape"))),
    Sample("Kimi CLI 0.42 session", "kimi", KIMI_CLI,
           Path(".kimi/sessions/00d5060aaec3fda180930ea52304b87b") / KIMI_CLI.name,
           (("", "cut"), ("", "shape"))),
    Sample("Cursor agent transcript", "cursor", CURSOR,
           Path(".cursor/projects/Users-user-microgptJS/agent-transcripts") / CURSOR.name, (("", "shape"),)),
    Sample("Amp thread", "amp", AMP, Path(".local/share/amp/threads") / AMP.name, (("", "cut"), ("", "shape"))),
]
DETECTED = {"claude_code", "codex", "gemini", "qwen", "copilot_cli", "copilot_chat", "cline", "roo", "opencode",
            "pi", "openclaw", "kimi", "cursor", "amp"}
"""goose is not in this home: its only real store (tests/fixtures/samples/goose) holds a session
without a message, which `sessions detect` rightly does not count."""

CLAUDE_AI = S / "claude_ai/simonw-claude-to-sqlite/conversations.json"
CHATGPT = S / "chatgpt-export/chatlore/conversations.json"
AIDER = next((S / "aider/lemon-squeezer/runs").glob("*wifi-stats*/aider.chat.history.md"))
SPECSTORY = S / "specstory/getspecstory/specstory-cli"

SHAPE = {
    ".json": b'{"kind": "settings", "theme": "dark", "items": [1, 2, 3]}\n',
    ".jsonl": b'{"event": "heartbeat", "n": 1}\n{"event": "heartbeat", "n": 2}\n',
    ".txt": b"",
    ".md": b"# Notes\n\nNothing but notes: no prompt, no reply.\n",
}
"""A file of another shape for each extension: valid JSON of no agent's shape, an empty
transcript, markdown without a conversation."""

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
MARKDOWN = {"Aider", "SpecStory"}
"""Histories in markdown: a cut one is a shorter conversation, nothing in it says it was cut (so
is a cut Cursor .txt transcript, which gets no cut copy here)."""
LABELS = [s.label for s in HOME_SAMPLES] + ["claude.ai export", "ChatGPT export", "Aider", "SpecStory"]
def _damaged_name(path: Path, how: str) -> str:
    """A name the store still lists: a name holding a uuid (Amp's `T-<uuid>.json`, Roo's task
    folders, Copilot's session folders ...) gets another uuid; other names get the damage
    before the extension."""
    found = list(UUID.finditer(path.name))
    if found:
        end = found[-1].end()
        return path.name[: end - 4] + ("cccc" if how == "cut" else "5555") + path.name[end:]
    stem, dot, ext = path.name.partition(".")
    return f"{stem}-{how}{dot}{ext}"


def _cut(data: bytes) -> bytes:
    """The first part of a file, cut inside a record (as a full disk or a killed writer leaves
    it): 20 bytes into the first line that starts after the middle."""
    newline = data.find(b"\n", len(data) // 2)
    return data[: newline + 20] if 0 <= newline < len(data) - 40 else data[: len(data) // 2]


def _damage(src: Path, dest: Path, how: str, inner: str = "", *, keep_name: bool = False) -> Path:
    """A damaged copy of `src` (a file, or a session folder with `inner` damaged) beside `dest`
    (or at `dest` itself with `keep_name`)."""
    copy = dest if keep_name else dest.parent / _damaged_name(dest, how)
    if src.is_dir():
        shutil.copytree(src, copy)
    target = copy / inner if inner else copy
    original = src / inner if inner else src
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(_cut(original.read_bytes()) if how == "cut" else SHAPE[original.suffix])
    return copy


@dataclass
class Run:
    home: Path
    detected: dict[str, Any]
    ingest: Any
    places: dict[Path, str] = field(default_factory=dict)
    """Every real sample's place, with its label."""
    damaged: dict[Path, tuple[str, str]] = field(default_factory=dict)
    """Every damaged file's (or session folder's) place, with its sample's label and the damage."""
    roles: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    timed: dict[str, bool] = field(default_factory=lambda: defaultdict(bool))
    sources: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def lines_about(self, place: Path) -> list[tuple[str, str]]:
        summary = self.ingest.json
        return [(kind, entry["message"]) for kind in ("errors", "unrecognised", "warnings")
                for entry in summary.get(kind) or ()
                if _under(entry.get("source_uri") or "", place)]


def _under(uri: str, place: Path) -> bool:
    path = uri.split("#", 1)[0]
    return path == str(place) or path.startswith(str(place) + "/")


def _lay_out(home: Path, run: Run) -> None:
    for sample in HOME_SAMPLES:
        dest = home / sample.dest
        dest.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if sample.src.is_dir() else shutil.copy)(sample.src, dest)
        run.places[dest] = sample.label
        for inner, how in sample.damaged:
            run.damaged[_damage(sample.src, dest, how, inner)] = (sample.label, how)
    _opencode_damage(home / ".local/share/opencode/storage", run)
    (home / CODE_USER / "workspaceStorage/0f1e2d3c/workspace.json").write_text(
        json.dumps({"folder": "file:///home/user/git-ai"}))


def _opencode_damage(storage: Path, run: Run) -> None:
    """OpenCode's store lists a session by its file and reads its messages from
    `message/<session id>/`: a damaged session is a copy of a real one under another id, its
    session file cut or of another shape."""
    real = storage / "session" / OPENCODE_PROJECT / f"{OPENCODE_SESSION}.json"
    for how, tag in (("cut", "cccc"), ("shape", "5555")):
        other = OPENCODE_SESSION[:-4] + tag
        shutil.copytree(storage / "message" / OPENCODE_SESSION, storage / "message" / other)
        copy = real.with_name(f"{other}.json")
        copy.write_bytes(_cut(real.read_bytes()) if how == "cut" else SHAPE[".json"])
        run.damaged[copy] = ("OpenCode storage", how)


def _chat_roots(tmp: Path, run: Run) -> list[Path]:
    roots = []
    for label, src in (("claude.ai export", CLAUDE_AI), ("ChatGPT export", CHATGPT)):
        root = tmp / label.split()[0].replace(".", "_")
        root.mkdir()
        shutil.copy(src, root / "conversations.json")
        run.places[root / "conversations.json"] = label
        for how in ("cut", "shape"):
            (root / how).mkdir()
            run.damaged[_damage(src, root / how / "conversations.json", how, keep_name=True)] = (label, how)
        roots.append(root)
    return roots


def _repo(tmp: Path, run: Run) -> Path:
    repo = tmp / "repo"
    shutil.copytree(SPECSTORY, repo)
    shutil.copy(AIDER, repo / ".aider.chat.history.md")
    (repo / "main.go").write_text("package main\n\nfunc main() {}\n")
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True)
    run.places[repo / ".aider.chat.history.md"] = "Aider"
    history = repo / ".specstory" / "history"
    for md in history.glob("*.md"):
        run.places[md] = "SpecStory"
    first = sorted(history.glob("*.md"))[0]
    for how in ("cut", "shape"):
        run.damaged[_damage(first, history / f"2026-03-0{1 if how == 'cut' else 2}_10-00-00Z-x.md", how)] = \
            ("SpecStory", how)
        aider = repo / f"{how}-run" / ".aider.chat.history.md"
        aider.parent.mkdir()
        aider.write_bytes(_cut(AIDER.read_bytes()) if how == "cut" else SHAPE[".md"])
        run.damaged[aider] = ("Aider", how)
    return repo


ENV_OVERRIDES = ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME",
                 "GEMINI_CLI_HOME", "COPILOT_HOME", "QWEN_HOME", "QWEN_RUNTIME_DIR", "PI_CODING_AGENT_DIR",
                 "OPENCLAW_STATE_DIR", "KIMI_CODE_HOME", "KIMI_SHARE_DIR", "CURSOR_CONFIG_DIR", "GOOSE_PATH_ROOT",
                 "CLINE_DIR", "CLINE_DATA_DIR", "APPDATA", "LOCALAPPDATA", "AMP_HOME", "CHINVEX_CONTEXTS_ROOT",
                 "CHINVEX_INDEXES_ROOT", "CHINVEX_CONTEXT", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
                 "ANTHROPIC_PROFILE", "ANTHROPIC_BASE_URL", "OLLAMA_HOST")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The fake home, `sessions detect`, `context create`, one `ingest` and `export`."""
    tmp = tmp_path_factory.mktemp("fake_home")
    home = tmp / "home"
    with pytest.MonkeyPatch.context() as mp:
        for var in ENV_OVERRIDES:
            mp.delenv(var, raising=False)
        mp.setenv("HOME", str(home))
        mp.setenv("CHINVEX_HOME", str(tmp / "chinvex_home"))
        mp.setenv("ANONYMIZED_TELEMETRY", "False")
        mp.setenv("CHINVEX_CODEX_BIN", "")  # the rollout files, not a server
        result = Run(home=home, detected={}, ingest=None)
        _lay_out(home, result)
        detected = run_cli_in_process("sessions", "detect", "--json")
        assert detected.code == 0, detected
        result.detected = detected.json
        claude_ai, chatgpt = _chat_roots(tmp, result)
        repo = _repo(tmp, result)
        made = run_cli_in_process("context", "create", "X", "--sessions", "auto", "--chat-root", str(claude_ai),
                                  "--chat-root", str(chatgpt), "--repo", str(repo))
        assert made.code == 0, made
        result.ingest = run_cli_in_process("ingest", "--context", "X", "--json")
        out = tmp / "export.jsonl"
        exported = run_cli_in_process("export", "--context", "X", "--out", str(out))
        assert exported.code == 0, exported
    labels = {**result.places, **{p: f"{label} ({how})" for p, (label, how) in result.damaged.items()}}
    for line in out.read_text().splitlines():
        record = json.loads(line)
        if record["kind"] != "document" or record["metadata"].get("doc_type") != "conversation":
            continue
        # A conversation found in two files (a cut copy of a session beside it) is one document
        # with both files among its origins; its turns are those of its first origin.
        first = record.get("origin_uri") or record["source_uri"]
        origins = {o["origin_uri"] for o in record.get("origins") or ()} | {first}
        for origin in origins:
            label = next((name for place, name in labels.items() if _under(origin, place)), f"elsewhere: {origin}")
            result.sources[label].add(record["metadata"]["source"])
            if origin != first:
                continue
            for turn in record.get("turns") or []:
                result.roles[label].add(turn["role"])
                result.timed[label] = result.timed[label] or bool(turn.get("ts"))
    return result


def test_sessions_detect_names_every_agent_present_and_no_other(run: Run):
    assert set(run.detected["agents"]) == DETECTED, run.detected


def test_the_ingest_exits_0_without_a_traceback(run: Run):
    assert_no_traceback(run.ingest)
    assert run.ingest.code == 0, run.ingest
    assert run.ingest.json["errors"] == [], run.ingest.json["errors"]


def test_every_real_file_is_exported_as_a_conversation_with_user_and_assistant_turns_and_times(run: Run):
    expected = {s.label: s.source for s in HOME_SAMPLES} | {
        "claude.ai export": "claude_ai", "ChatGPT export": "chatgpt_export", "Aider": "aider", "SpecStory": "specstory"}
    assert {label: run.sources.get(label) for label in expected} == {k: {v} for k, v in expected.items()}
    missing = {label: sorted(run.roles[label]) for label in expected if not {"user", "assistant"} <= run.roles[label]}
    assert not missing, missing
    untimed = [label for label in expected if not run.timed[label]]
    assert not untimed, untimed
    assert not [label for label in run.sources if label.startswith("elsewhere")], dict(run.sources)


def _damaged(run: Run, label: str, how: str) -> Path:
    (place,) = [p for p, (name, damage) in run.damaged.items() if name == label and damage == how]
    return place


@pytest.mark.parametrize("label", LABELS)
def test_a_misshaped_file_of_each_format_is_one_skip_line_and_not_indexed(run: Run, label: str):
    place = _damaged(run, label, "shape")
    lines = run.lines_about(place)
    assert [kind for kind, _ in lines] == ["unrecognised"], (label, lines)
    named, _, why = lines[0][1].partition(": ")
    assert _under(named, place) and why.startswith("not ") and "\n" not in why, lines
    assert f"{label} (shape)" not in run.sources


def test_a_cut_file_of_each_format_is_one_line_or_keeps_its_complete_records(run: Run):
    """Never an error or a traceback: a cut JSON document cannot be read (one skip line); a cut
    log or markdown history keeps its complete records."""
    problems = []
    for place, (label, how) in sorted(run.damaged.items()):
        if how != "cut":
            continue
        lines = run.lines_about(place)
        kept = f"{label} (cut)" in run.sources
        if len(lines) > 1 or any("\n" in text or kind == "errors" for kind, text in lines):
            problems.append(f"{label}: {lines}")
        elif not lines and not kept:
            problems.append(f"{label}: neither a line nor a conversation")
    assert not problems, "\n".join(problems)
    assert {label for label, how in run.damaged.values() if how == "cut"} == set(LABELS) - {"Cursor agent transcript"}


@pytest.mark.parametrize("label", [x for x in LABELS if x not in MARKDOWN | {"Cursor agent transcript"}])
def test_a_cut_json_or_jsonl_file_is_said_in_one_line(run: Run, label: str):
    place = _damaged(run, label, "cut")
    lines = run.lines_about(place)
    assert len(lines) == 1 and lines[0][0] in ("unrecognised", "warnings"), (label, lines)
    assert place.name in lines[0][1] and "\n" not in lines[0][1], lines
