"""A realistic mixed corpus built under a temporary folder, and seeded edits to it.

Code and notes are generated (many distinct functions and sections, so ingest has real chunking
and embedding work); conversations are copies of tests/fixtures/samples (a ChatGPT export, Codex
rollouts, a Claude Code session). Every generated file carries a unique marker word so tests can
tell by search which files are indexed.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from helpers import FIXTURES  # tests/ is on sys.path wherever `hostile` imports

CHATGPT = FIXTURES / "chatgpt-export"
ROLLOUTS = FIXTURES / "codex-rollout" / "public"
CLAUDE = FIXTURES / "claude-code" / "agent-sessions" / "projects"

_SYLLABLES = ("ka", "lo", "mi", "ren", "tas", "vor", "qui", "zel", "bra", "dun", "fe", "gor",
              "hil", "jun", "pex", "sor", "tri", "wam", "yel", "nox")


def word(rng: random.Random, parts: int = 3) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(parts))


def sentence(rng: random.Random, n: int = 12) -> str:
    return " ".join(word(rng, rng.randint(1, 3)) for _ in range(n)).capitalize() + "."


@dataclass
class Corpus:
    base: Path
    repo: Path
    notes: Path
    chat: Path
    codex: Path
    claude: Path

    def roots(self) -> dict[str, list[str]]:
        return {"repos": [str(self.repo)], "note_roots": [str(self.notes)],
                "chat_roots": [str(self.chat)], "codex_session_roots": [str(self.codex)],
                "claude_session_roots": [str(self.claude)]}

    def cli_flags(self) -> list[str]:
        return ["--repo", str(self.repo), "--note-root", str(self.notes), "--chat-root",
                str(self.chat), "--codex-sessions", str(self.codex), "--claude-sessions",
                str(self.claude)]


def python_module(rng: random.Random, marker: str, functions: int) -> str:
    parts = [f'"""Module {marker}: {sentence(rng)}"""\n\nimport math\n']
    for i in range(functions):
        name = f"{word(rng)}_{word(rng, 2)}_{i}"
        doc = " ".join(sentence(rng, rng.randint(8, 16)) for _ in range(rng.randint(2, 4)))
        body = "\n".join(f"    {word(rng)}_{j} = value * {rng.randint(2, 99)} + math.sqrt({j + 1})"
                         for j in range(rng.randint(3, 8)))
        parts.append(f'\n\ndef {name}(value: float) -> float:\n    """{doc}"""\n{body}\n'
                     f"    return value  # {marker}\n")
    return "".join(parts)


def markdown_note(rng: random.Random, marker: str, sections: int) -> str:
    parts = [f"# Note {marker}\n\n{sentence(rng, 20)}\n"]
    for _ in range(sections):
        parts.append(f"\n## {word(rng).capitalize()} {word(rng)}\n\n")
        parts.append("\n\n".join(" ".join(sentence(rng, rng.randint(10, 25)) for _ in range(3))
                                 for _ in range(rng.randint(1, 3))) + "\n")
    return "".join(parts)


def copy_file(src: Path, dest: Path) -> None:
    """Copied by content: the fixtures are read-only and tests edit the copies."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(src.read_bytes())


def build(base: Path, *, seed: int = 7, modules: int = 8, functions: int = 4,
          notes: int = 8, sections: int = 3, big_rollout: bool = False) -> Corpus:
    """Defaults give about a hundred chunks: seconds to embed, many write batches with a small
    writer batch. `big_rollout` adds a rollout of about 500 chunks."""
    rng = random.Random(seed)
    corpus = Corpus(base, base / "repo", base / "notes", base / "chat", base / "codex", base / "claude")
    for folder in (corpus.repo, corpus.notes, corpus.chat, corpus.codex, corpus.claude):
        folder.mkdir(parents=True, exist_ok=True)
    for i in range(modules):
        package = corpus.repo / f"pkg{i % 3}"
        package.mkdir(exist_ok=True)
        (package / f"mod{i}.py").write_text(python_module(rng, f"codemarker{i}", functions))
    for i in range(notes):
        (corpus.notes / f"note{i}.md").write_text(markdown_note(rng, f"notemarker{i}", sections))
    copy_file(CHATGPT / "chatlore" / "conversations.json", corpus.chat / "lore" / "conversations.json")
    sessions = ROLLOUTS / "localpush" / "sessions"
    for src in sorted(sessions.rglob("*.jsonl")):
        copy_file(src, corpus.codex / "sessions" / src.relative_to(sessions))
    if big_rollout:
        for src in sorted((ROLLOUTS / "codemie-code").glob("rollout-*.jsonl")):
            copy_file(src, corpus.codex / "sessions" / "2026" / "05" / "11" / src.name)
    for src in sorted(CLAUDE.rglob("*.jsonl")):
        copy_file(src, corpus.claude / "projects" / src.relative_to(CLAUDE))
    return corpus


def mutate(corpus: Corpus, rng: random.Random, step: int) -> list[str]:
    """One round of user activity: edit a module, delete a note, add files, and now and then
    drop a conversation from an export or delete a rollout. Returns what was done."""
    done: list[str] = []
    modules = sorted(corpus.repo.rglob("*.py"))
    if modules:
        target = rng.choice(modules)
        text = target.read_text()
        lines = text.splitlines(keepends=True)
        cut = rng.randrange(len(lines))
        lines[cut] = f"# edited in step {step}: {sentence(rng, 6)} editmarker{step}\n"
        target.write_text("".join(lines))
        done.append(f"edited {target.name}")
    notes = sorted(corpus.notes.glob("*.md"))
    if len(notes) > 3:
        victim = rng.choice(notes)
        victim.unlink()
        done.append(f"deleted {victim.name}")
    new_note = corpus.notes / f"added{step}.md"
    new_note.write_text(markdown_note(rng, f"addmarker{step}", rng.randint(1, 4)))
    done.append(f"added {new_note.name}")
    if rng.random() < 0.5:
        module = corpus.repo / "pkg_new" / f"added{step}.py"
        module.parent.mkdir(exist_ok=True)
        module.write_text(python_module(rng, f"addcodemarker{step}", rng.randint(2, 6)))
        done.append(f"added {module.name}")
    lore = corpus.chat / "lore" / "conversations.json"
    if lore.exists() and rng.random() < 0.3:
        data = json.loads(lore.read_text())
        if len(data) > 1:
            data.pop(rng.randrange(len(data)))
            lore.write_text(json.dumps(data))
            done.append("dropped a conversation from the lore export")
    rollouts = sorted(corpus.codex.rglob("*.jsonl"))
    if len(rollouts) > 2 and rng.random() < 0.25:
        victim = rng.choice(rollouts)
        victim.unlink()
        done.append(f"deleted rollout {victim.name}")
    return done
