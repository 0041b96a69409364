"""Ingest speed of every agent's session adapter, and of the claude.ai and ChatGPT exports,
against the Claude Code adapter's on the same amount of text (issue 36: within 1.2x).

What differs between agents is the adapter: after it, every conversation goes through the same
redaction, chunking, embedding and writes, whose cost depends on the text alone. So the figure
is the adapter's own cost on the same amount of text: enumerating and parsing every real sample
of an agent (tests/fixtures/samples/<kind>, the files its adapter recognises, hidden ones too),
best of fifteen, in microseconds per 1,000 characters of the turns produced, as a ratio to
Claude Code's; per turn beside it (turns differ in size from one agent to another, so that
ratio follows their length as much as the adapter). Formats that carry much structure per word
(VS Code's chat JSON) pay more per character. Beside it, for information, a whole in-process ingest of the sample folder
(`includes.sessions` KIND=PATH, the built-in embedder loaded once and shared) in milliseconds
per 1,000 characters: dominated by the embedder, whose cost follows the number of chunks (each
is padded to 128 tokens), so agents with many short turns pay more per character there.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from common import FIXTURES, REPO, Figure, print_figures

OUT = REPO / "bench" / "out" / "agents"
KINDS = {
    "claude_code": "claude-code", "codex": "codex-rollout", "aider": "aider", "specstory": "specstory",
    "cline": "cline", "pi": "pi", "openclaw": "openclaw", "kimi": "kimi", "gemini": "gemini_cli",
    "qwen": "qwen_code", "copilot_cli": "copilot_cli", "copilot_chat": "vscode_copilot",
    "opencode": "opencode", "goose": "goose", "cursor": "cursor", "amp": "amp",
}
"""Agent (as `--sessions KIND=PATH` names it) -> its sample folder."""
EXPORTS = {"claude_ai": "claude_ai", "chatgpt": "chatgpt-export"}
"""Chat exports (read from `chat_roots` by the chat_export adapter, chosen by content) -> their
sample folder."""
EXPORT_READER = "chat_export"
PARSE_REPEATS = 15


def _text_of(docs: list) -> tuple[int, int]:
    turns = sum(len(d.turns) for d in docs if hasattr(d, "turns"))
    chars = sum(len(t.text) for d in docs if hasattr(d, "turns") for t in d.turns)
    return turns, chars


def sample_files(agent: str, root: Path) -> list[Path]:
    """The files under `root` (hidden ones too) that `agent`'s adapter reads as sessions."""
    from chinvex.ingest.adapters import adapter as load_adapter
    from chinvex_adapters.discovery import kinds

    reader = load_adapter(kinds()[agent].reader)
    recognises = getattr(reader, "recognises", None)
    if recognises is None:
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and recognises(p))


def parse_only(agent: str, root: Path) -> tuple[float, int, int]:
    """Seconds to parse every sample session once (best of a few), and the turns and characters
    they hold. Files are read through the agent's adapter; multi-file sessions (task folders,
    storage trees, databases) through its enumeration of `root`. A chat export is read as its
    chat root is, through the chat_export adapter's enumeration."""
    from chinvex.ingest.adapters import adapter as load_adapter
    from chinvex.models.sources import AdapterOptions, ParseReport, SourceCandidate
    from chinvex_adapters.discovery import kinds

    reader = load_adapter(EXPORT_READER if agent in EXPORTS else kinds()[agent].reader)
    files = [] if agent in EXPORTS else sample_files(agent, root)
    candidates = [c for c in reader.enumerate(root, AdapterOptions(context_name="bench"))
                  if isinstance(c, SourceCandidate)]
    listed = {c.source_uri for c in candidates}
    candidates += [SourceCandidate(source_uri=str(p), source_type="agent_session", adapter=reader.name,
                                   root=str(p.parent), path=p) for p in files if str(p) not in listed]
    best, turns, chars = float("inf"), 0, 0
    for _ in range(PARSE_REPEATS):
        started = time.perf_counter()
        docs = []
        for cand in candidates:
            try:
                docs.extend(load_adapter(cand.adapter or reader.name).parse(cand, ParseReport(), None))
            except Exception:  # noqa: BLE001 - a sample that is not a session is skipped in ingest too
                pass
        best = min(best, time.perf_counter() - started)
        turns, chars = _text_of(docs)
    return best, turns, chars


def full_ingest(agent: str, root: Path, embedder) -> float | None:
    """Seconds of one in-process ingest of `root` into a fresh context (embedder already loaded);
    None when the store's layout hides its samples from a plain walk (histories kept in hidden
    folders of a repository), so that a figure never stands for nothing indexed."""
    from chinvex.ingest.pipeline import IngestOptions, run_ingest
    from chinvex.context.registry import Registry

    home = OUT / agent
    shutil.rmtree(home, ignore_errors=True)
    os.environ["CHINVEX_HOME"] = str(home)
    includes = {"chat_roots": [str(root)]} if agent in EXPORTS else {"sessions": [f"{agent}={root}"]}
    config = Registry().create(agent, includes=includes).config
    started = time.perf_counter()
    summary = run_ingest(config, IngestOptions(embedder_factory=lambda: embedder))
    elapsed = time.perf_counter() - started
    if summary.errors:
        print(f"note: {agent}: {len(summary.errors)} sources failed", file=sys.stderr)
    return elapsed if summary.sources.indexed else None


def run(quick: bool = False) -> list[Figure]:
    from chinvex.embedding.factory import make_embedder
    from chinvex.models.context import EmbeddingConfig
    from chinvex_adapters.discovery import kinds

    OUT.mkdir(parents=True, exist_ok=True)
    embedder = make_embedder(EmbeddingConfig())
    embedder.embed_documents(["warm up the model once"])
    known = kinds()
    rows: dict[str, tuple[float, float, float, int, int]] = {}
    for agent, kind in {**KINDS, **EXPORTS}.items():
        root = FIXTURES / kind
        if (agent not in known and agent not in EXPORTS) or not root.is_dir():
            continue
        parse_s, turns, chars = parse_only(agent, root)
        if not turns or not chars:
            continue
        ingest_s = full_ingest(agent, root, embedder)
        rows[agent] = (ingest_s * 1000 / (chars / 1000) if ingest_s else float("nan"), parse_s * 1e6 / turns,
                       parse_s * 1e6 / (chars / 1000), turns, chars)
    base = rows.get("claude_code")
    figures: list[Figure] = []
    for agent, (ms_per_kchar, us_per_turn, us_per_kchar, turns, chars) in rows.items():
        turn_ratio = us_per_turn / base[1] if base else None
        kchar_ratio = us_per_kchar / base[2] if base else None
        ingest_ratio = ms_per_kchar / base[0] if base else None
        is_base = agent == "claude_code"
        figures.append(Figure(
            f"{agent}: adapter cost on the same amount of text, vs Claude Code", kchar_ratio, "x",
            "" if is_base else "<= 1.2x", None if is_base or kchar_ratio is None else kchar_ratio <= 1.2,
            note=(f"{us_per_kchar:.0f} us per 1,000 characters of turns; per turn {us_per_turn:.0f} us "
                  f"({turn_ratio:.2f}x); whole ingest "
                  + (f"{ms_per_kchar:.0f} ms/kchar ({ingest_ratio:.2f}x)" if ms_per_kchar == ms_per_kchar
                     else "not run (samples in hidden folders)")
                  + f"; {turns} turns, {chars:,} chars")))
    return figures


if __name__ == "__main__":
    print_figures("Agents' adapters: ingest speed", run())
