"""Git repositories whose history is made by replaying real session files' edits, for the blame
tests: every edit an agent recorded (parsed by its own adapter) is applied to a work tree and
committed by itself, dated a second after the edit, so `git blame` names, for each line, the
commit of the actor that wrote it: one session, or "a person" (the text an edit replaced, when
the recorded session does not hold the file's earlier content, is first committed by a person,
as a developer would have written it).

The replay is a simulation of where edits land (an edit whose replaced text is not in the file
appends its new text), but each line's author is known for certain, which is what blame must
find."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from helpers import git, init_repo, parse_file

from chinvex.paths import recorded_absolute, recorded_parts

PERSON = "person"

ONE_PER_AGENT: dict[str, str] = {
    # the agent's `includes.sessions` kind -> a real session file of it that edits files
    "claude_code": "claude-code/codemie-code/projects/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
    "codex": "codex-rollout/generated-0.169.0/apply-patch/sessions/2026/11/28/"
                         "rollout-2026-11-28T21-23-09-01a2240a-5ee5-7170-a256-a40cba21d208.jsonl",
    "gemini": "gemini_cli/vibecodingtracker/tmp/discordbot/chats/session-2026-04-23T12-52-0ab84937.jsonl",
    "copilot_chat": "vscode_copilot/git-ai/chatSessions/331fed7f-cfd6-409c-8502-06a56322b636.json",
    "cline": "cline/cline-sdk-cline-repo/data/sessions/1784094124598_rruoq/1784094124598_rruoq.messages.json",
    "cursor": "cursor/microgptjs/chat-logs/02-readme-and-deployment.txt",
    "pi": "pi/pi-mono/agent/sessions/--Users-user-workspaces-pi-mono--/"
          "2025-12-09T00-53-29-825Z_ffae836b-9420-4060-ac13-7745215f90ff.jsonl",
    "qwen": "qwen_code/hockeyscrapper/projects/c--users-user-se-toolkit-lab-8/chats/"
            "6af11f56-0827-497c-b897-6069305c5126.jsonl",
    "goose": "goose/convergeai-session-export/goose_native_chat_history.json",
    "copilot_cli": "copilot_cli/vibecodingtracker/history-session-state/"
                   "session_0b2a81da-02cf-4cbb-ae14-07c597b84f4e_1760187292206.json",
    "openclaw": "openclaw/charbi-agent/agents/main/sessions/3cdaedd3-abab-40b6-9859-e6605dc1c2ca.jsonl",
    "opencode": "opencode/jwp23-dotfiles/sqlite-migrated-by-1.3.2/opencode.db",
    "kimi": "kimi/agent-sessions/kimi-code/sessions/wd_project_ac3bb318f98e/"
            "session_1bcbe023-4f7e-4971-9dc9-43b8756045b0/agents/main/wire.jsonl",
    "roo": "cline/roo-jsboige-test-leaf-a1/tasks/b423bff7-6fec-40fe-a00e-bb2a0ebb52f4/api_conversation_history.json",
    "specstory": "specstory/getspecstory/specstory-cli/.specstory/history/2026-02-20_16-33-05Z-start-with-docs-git.md",
    "aider": "aider/aider-repo/chat-history.md",
}
"""Sessions reached as KIND=FILE entries of `includes.sessions`."""
ADAPTER = {"codex": "cx_sessions_jsonl", "openclaw": "pi", "roo": "cline"}
"""The adapter that parses a kind's files, where its name differs."""
CODEX_JITTER = ("codex-rollout/generated-0.169.0/apply-patch/sessions/2026/11/28/"
                "rollout-2026-11-28T21-23-15-01a2240a-7629-7143-95ba-74722ae2ab78.jsonl")
"""The Codex session after ONE_PER_AGENT's: it rewrites part of the function the first wrote."""


@dataclass
class SessionEdit:
    ts: datetime
    thread_id: str
    rel: str  # where the file sits in the replayed repository
    op: str
    old: str | None
    new: str | None


@dataclass
class Replay:
    repo: Path
    actors: dict[str, str] = field(default_factory=dict)  # commit sha -> thread id or PERSON
    files: set[str] = field(default_factory=set)
    added: dict[str, set[str]] = field(default_factory=dict)  # rel -> normalised lines sessions added


def rel_in_repo(path: str, project: str | None) -> str:
    """The edit's file relative to the session's project folder; a file outside it (or a session
    without one) keeps its last two components."""
    mine = recorded_parts(path)
    if project:
        root = recorded_parts(project)
        if [p.lower() for p in mine[:len(root)]] == [p.lower() for p in root] and len(mine) > len(root):
            return "/".join(mine[len(root):])
    return "/".join(mine[-2:]) if recorded_absolute(path) else "/".join(mine)


def session_edits(adapter_name: str, path: Path) -> tuple[list[SessionEdit], list[str]]:
    """The edits of a real session file, in time order, and its thread ids."""
    from chinvex.ingest.adapters import adapter
    docs, _ = parse_file(adapter(adapter_name), path)
    edits: list[SessionEdit] = []
    for doc in docs:
        project = doc.metadata.get("cwd") or next(
            (p for p in doc.links.repo_paths if recorded_absolute(p)), None)
        for turn in doc.turns:
            for edit in turn.meta.get("edits") or ():
                where = edit.get("abs_path") or edit.get("path")
                ts = turn.ts or doc.updated_at
                if where and ts is not None and edit["op"] != "delete":
                    edits.append(SessionEdit(ts, doc.thread_id, rel_in_repo(where, project), edit["op"],
                                             edit.get("old_text"), edit.get("new_text")))
    edits.sort(key=lambda e: e.ts)
    return edits, [d.thread_id for d in docs]


class Replayer:
    def __init__(self, repo: Path):
        init_repo(repo)
        self.r = Replay(repo)
        self.last: datetime | None = None

    def _commit(self, message: str, actor: str, when: datetime) -> None:
        if self.last is not None and when <= self.last:
            when = self.last + timedelta(seconds=1)
        self.last = when
        git(self.r.repo, "add", "-A")
        if not git(self.r.repo, "status", "--porcelain"):
            return
        git(self.r.repo, "commit", "-q", "-m", message, when=when,
            author="Person" if actor == PERSON else "Agent")
        self.r.actors[git(self.r.repo, "rev-parse", "HEAD").strip()] = actor

    def apply(self, edit: SessionEdit, *, commit: bool = True) -> None:
        from chinvex.blame.lines import added_lines

        target = self.r.repo / edit.rel
        target.parent.mkdir(parents=True, exist_ok=True)
        text = target.read_text(encoding="utf-8") if target.exists() else ""
        new = edit.new or ""
        if edit.op == "write" or edit.old is None or not edit.old.strip():
            text = new + "\n" if edit.op == "write" else _append(text, new)
        else:
            if edit.old not in text:
                target.write_text(_append(text, edit.old), encoding="utf-8")
                self._commit(f"person writes what {edit.thread_id[:8]} will change", PERSON,
                             edit.ts - timedelta(seconds=30))
                text = target.read_text(encoding="utf-8")
            text = text.replace(edit.old, new, 1)
        target.write_text(text, encoding="utf-8")
        self.r.files.add(edit.rel)
        self.r.added.setdefault(edit.rel, set()).update(added_lines(edit.old, edit.new))
        if commit:
            self._commit(f"{edit.thread_id[:8]}: {edit.op} {edit.rel}", edit.thread_id,
                         edit.ts + timedelta(seconds=1))

    def person_line(self, rel: str, line: str, when: datetime) -> None:
        target = self.r.repo / rel
        target.write_text(_append(target.read_text(encoding="utf-8"), line), encoding="utf-8")
        self._commit(f"person edits {rel}", PERSON, when)


def _append(text: str, new: str) -> str:
    if text and not text.endswith("\n"):
        text += "\n"
    return text + new + ("" if new.endswith("\n") else "\n")


def oracle(repo: Path, rel: str) -> list[tuple[int, str, str]]:
    """(line, commit sha, text) of every line of `rel`, as git blame gives them."""
    out = git(repo, "blame", "--root", "-l", "-s", "-w", "--", rel)
    lines = []
    for raw in out.splitlines():
        match = re.match(r"^\^?([0-9a-f]{40}) +(\d+)\) ?(.*)$", raw)
        assert match, raw
        lines.append((int(match[2]), match[1], match[3]))
    return lines

