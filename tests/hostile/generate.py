"""The hostile-input corpus: every kind of bad file a user's folders really hold, generated at
test time (the big ones would be megabytes in git).

`build(base)` makes five roots (repo, notes, chat, codex sessions, claude sessions), each with
one good file carrying a unique marker word next to the hostile ones, and returns what a test
needs: the roots, the good files' markers, and each hostile file with the outcome it must get.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

from hostile.corpus import CHATGPT, CLAUDE, ROLLOUTS, copy_file

ROLLOUT_GOOD = ROLLOUTS / "localpush" / "sessions" / "2026" / "02" / "23" / \
    "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"
CLAUDE_GOOD = CLAUDE / "-Users-example" / "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl"
DEEP = 100_000


@dataclass
class Hostile:
    base: Path
    roots: dict[str, Path]
    good: dict[str, str] = field(default_factory=dict)
    """source path -> a marker word only that good file contains"""
    bad: dict[str, str] = field(default_factory=dict)
    """source path -> why it is hostile (for messages)"""
    ok_anyway: set[str] = field(default_factory=set)
    """hostile files that are still fine to index (e.g. invalid UTF-8 is replaced)"""
    survives: dict[str, list[str]] = field(default_factory=dict)
    """hostile source path -> marker words that must still be searchable (the damage is local:
    one bad byte, line or value must not cost the rest of the file)"""

    def includes(self) -> dict[str, list[str]]:
        keys = {"repo": "repos", "notes": "note_roots", "chat": "chat_roots",
                "codex": "codex_session_roots", "claude": "claude_session_roots"}
        return {keys[k]: [str(v)] for k, v in self.roots.items()}

    def plant(self, path: Path, why: str, data: bytes | str | None = None) -> Path:
        """Write `data` (when given) at `path` and record the file as hostile, for `why`."""
        if data is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(data, str):
                path.write_text(data)
            else:
                path.write_bytes(data)
        self.bad[str(path)] = why
        return path


def _rollout_line(kind: str, payload: dict, ts: str = "2026-03-01T10:00:00.000Z") -> str:
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload})


def _rollout(thread: str, *texts: str) -> str:
    lines = [_rollout_line("session_meta", {"id": thread, "timestamp": "2026-03-01T10:00:00.000Z",
                                             "cwd": "/tmp/x", "originator": "codex_cli_rs",
                                             "cli_version": "0.169.0"})]
    for text in texts:
        lines.append(_rollout_line("response_item", {"type": "message", "role": "user",
                                                     "content": [{"type": "input_text", "text": text}]}))
        lines.append(_rollout_line("response_item", {"type": "message", "role": "assistant",
                                                     "content": [{"type": "output_text", "text": "ok: " + text}]}))
    return "\n".join(lines) + "\n"


def _append_to_user_text(conversation: dict, text: str) -> None:
    """Add `text` to the first user message of a ChatGPT export conversation."""
    for node in (conversation.get("mapping") or {}).values():
        message = node.get("message") or {}
        parts = (message.get("content") or {}).get("parts")
        if (message.get("author") or {}).get("role") == "user" and parts and isinstance(parts[0], str):
            parts[0] = f"{parts[0]} {text}"
            return
    raise ValueError("no user message to mark")


def _deep_json(levels: int) -> str:
    return "[" * levels + "]" * levels


def _tiny_conversations(count: int) -> bytes:
    """`count` conversations of one short exchange each, written without building them all."""
    parts = []
    for i in range(count):
        parts.append(
            '{"id":"c%d","title":"tiny %d","create_time":1700000000,"update_time":1700000000,'
            '"current_node":"b","mapping":{"a":{"id":"a","children":["b"],"message":{"id":"a",'
            '"author":{"role":"user"},"content":{"content_type":"text","parts":["ping"]}}},'
            '"b":{"id":"b","parent":"a","children":[],"message":{"id":"b","author":{"role":'
            '"assistant"},"content":{"content_type":"text","parts":["pong"]}}}}}' % (i, i % 7))
    return ("[" + ",".join(parts) + "]").encode()


def build(base: Path, *, tiny_conversations: int = 10_000) -> Hostile:
    """The five roots under `base`, each with its good file and its hostile ones."""
    rng = random.Random(9)  # one generator across the roots, in this order: the same bytes every run
    roots = {name: base / name for name in ("repo", "notes", "chat", "codex", "claude")}
    for root in roots.values():
        root.mkdir(parents=True)
    h = Hostile(base=base, roots=roots)
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("SECRET = 'outsidemarker must never be indexed'\n")
    _repo(h, rng, outside)
    _notes(h, rng)
    _chat(h, rng, tiny_conversations)
    _codex(h, rng)
    _claude(h, rng)
    return h


def _repo(h: Hostile, rng: random.Random, outside: Path) -> None:
    """Code: binaries and random bytes, NUL bytes, invalid UTF-8, huge and deep JSON, odd file
    names, symlinks out of the root and in loops, a FIFO."""
    repo = h.roots["repo"]
    good = repo / "good.py"
    good.write_text("def healthy():\n    return 'repogoodmarker survives its neighbours'\n")
    h.good[str(good)] = "repogoodmarker"

    h.plant(repo / "image.txt", "binary with a text extension", b"\x89PNG\r\n\x1a\n" + rng.randbytes(4000))
    h.plant(repo / "random.py", "random bytes", rng.randbytes(6000))
    h.plant(repo / "nul.py", "NUL bytes in code", b"def f():\n    return 1\n" + b"\x00" * 64 + b"x = 2\n")
    latin = h.plant(repo / "invalid_utf8.py", "invalid UTF-8",
                b"def caf\xe9():\n    return 'cr\xe8me invalidutfmarker \xff\xfe'\n")
    h.ok_anyway.add(str(latin))
    h.survives[str(latin)] = ["invalidutfmarker"]
    h.plant(repo / "big_line.json", "10 MB single-line JSON",
        json.dumps({"rows": ["x" * 100] * 100_000}).encode())
    deep = h.plant(repo / "deep.json", "100k-level nested JSON", _deep_json(DEEP))
    h.ok_anyway.add(str(deep))
    minified = h.plant(repo / "bundle.min.js", "900 KB of code on one line",
                   ("var a=" + "+".join(f"b{i}" for i in range(120_000)) + ";").encode()[:900_000])
    h.ok_anyway.add(str(minified))
    for name in ("with space.py", "new\nline.py", "ünïcødé_名前.py", "emoji_🦄.md"):
        path = repo / name
        path.write_text(f"# {name!r}\nNAME = 'oddnamemarker'\n")
        h.good[str(path)] = "oddnamemarker"
    h.plant(Path(os.fsdecode(bytes(repo) + b"/latin1_\xe9t\xe9.py")), "file name that is not UTF-8",
        b"X = 'undecodablenamemarker'\n")
    (repo / "link_out.py").symlink_to(outside / "secret.py")
    h.bad[str(repo / "link_out.py")] = "symlink to a file outside the root"
    (repo / "dir_out").symlink_to(outside, target_is_directory=True)
    h.bad[str(repo / "dir_out")] = "symlink to a folder outside the root"
    (repo / "loop").symlink_to(repo, target_is_directory=True)
    h.bad[str(repo / "loop")] = "symlink loop"
    (repo / "dangling.py").symlink_to(h.base / "nowhere.py")
    h.bad[str(repo / "dangling.py")] = "dangling symlink"
    os.mkfifo(repo / "pipe.txt")
    h.bad[str(repo / "pipe.txt")] = "a FIFO with a text extension (reading it would block)"


def _notes(h: Hostile, rng: random.Random) -> None:
    """Notes: NUL bytes, binaries, invalid UTF-8, front matter that is broken, a YAML bomb or
    deeply nested, a FIFO."""
    notes = h.roots["notes"]
    good = notes / "good.md"
    good.write_text("# Good\n\nnotegoodmarker is the healthy note.\n")
    h.good[str(good)] = "notegoodmarker"
    h.plant(notes / "nul.md", "NUL bytes in a note", b"# Nul\n\nbefore\x00\x00after\n")
    h.plant(notes / "binary.md", "binary with .md", rng.randbytes(3000))
    bom = h.plant(notes / "invalid.md", "invalid UTF-8 in a note",
              b"# Caf\xe9\n\nnoteinvalidmarker \xc3\x28 \xa0\xa1\n")
    h.ok_anyway.add(str(bom))
    broken_yaml = h.plant(notes / "broken_front_matter.md", "front matter that is not YAML",
                      "---\ntitle: [unclosed\n: : :\n---\n\nbrokenyamlmarker body\n")
    h.ok_anyway.add(str(broken_yaml))
    h.survives[str(broken_yaml)] = ["brokenyamlmarker"]
    laughs = ["---", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i, (prev, cur) in enumerate(zip("abcdefgh", "bcdefghi")):
        laughs.append(f"{cur}: &{cur} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]")
    laughs += ["---", "", "billionlaughsmarker body", ""]
    bomb = h.plant(notes / "yaml_bomb.md", "billion-laughs YAML front matter", "\n".join(laughs))
    h.ok_anyway.add(str(bomb))
    h.survives[str(bomb)] = ["billionlaughsmarker"]
    nested = h.plant(notes / "deep_front_matter.md", "100k-level nested YAML front matter",
                 "---\nx: " + "[" * DEEP + "]" * DEEP + "\n---\n\ndeepyamlmarker body\n")
    h.ok_anyway.add(str(nested))
    h.survives[str(nested)] = ["deepyamlmarker"]
    os.mkfifo(notes / "pipe.md")
    h.bad[str(notes / "pipe.md")] = "a FIFO named .md"


def _chat(h: Hostile, rng: random.Random, tiny_conversations: int) -> None:
    """ChatGPT exports: not JSON, deep, the wrong shape, binary, huge, many tiny conversations,
    a broken zip, lone surrogate escapes."""
    chat = h.roots["chat"]
    good = chat / "good" / "conversations.json"
    copy_file(CHATGPT / "chatlore" / "conversations.json", good)
    data = json.loads(good.read_text())
    _append_to_user_text(data[0], "chatgoodmarker")
    good.write_text(json.dumps(data))
    h.good[str(good)] = "chatgoodmarker"
    h.plant(chat / "notjson" / "conversations.json", "conversations.json that is not JSON",
        "this is not json at all {")
    h.plant(chat / "deep" / "conversations.json", "100k-level nested conversations.json", _deep_json(DEEP))
    h.plant(chat / "object" / "conversations.json", "conversations.json holding an object",
        '{"conversations": "nope"}')
    h.plant(chat / "binary" / "conversations.json", "binary conversations.json", rng.randbytes(5000))
    h.plant(chat / "big" / "data.json", "10 MB single-line JSON that is not an export",
        json.dumps({"blob": "y" * 10_000_000}).encode())
    tiny = h.plant(chat / "tiny" / "conversations.json", f"{tiny_conversations} tiny conversations",
               _tiny_conversations(tiny_conversations))
    h.ok_anyway.add(str(tiny))
    h.plant(chat / "zip" / "export.zip", "a .zip that is not a zip", b"PK\x03\x04 broken" + rng.randbytes(200))
    surrogates = json.loads((CHATGPT / "chatlore" / "conversations.json").read_text())
    for conv in surrogates:  # a copy with the good export's ids would be the same documents
        for key in ("id", "conversation_id"):
            if conv.get(key):
                conv[key] = "lonecopy-" + conv[key]
    _append_to_user_text(surrogates[0], "cut emoji LONE lonechatmarker")
    _append_to_user_text(surrogates[1], "chatafterlonemarker")
    lone = h.plant(chat / "surrogate" / "conversations.json", "lone surrogate escapes (an emoji cut in half)",
               json.dumps(surrogates).replace("LONE", "\\udc80 \\ud83d"))
    h.ok_anyway.add(str(lone))
    h.survives[str(lone)] = ["lonechatmarker", "chatafterlonemarker"]


def _codex(h: Hostile, rng: random.Random) -> None:
    """Codex rollouts: empty, unknown record types, a huge line, a deep line, binary, NUL bytes,
    lone surrogates, a fake .zst, unrelated JSONL logs."""
    codex = h.roots["codex"]
    sessions = codex / "sessions" / "2026" / "03" / "01"
    good = sessions / ROLLOUT_GOOD.name
    good.parent.mkdir(parents=True)
    good.write_text(_rollout("019c0000-0000-7000-8000-00000000c0de", "codexgoodmarker question"))
    h.good[str(good)] = "codexgoodmarker"

    def rollout_name(n: int) -> Path:
        return sessions / f"rollout-2026-03-01T10-00-0{n}-019c0000-0000-7000-8000-00000000000{n}.jsonl"

    h.plant(rollout_name(1), "empty rollout", b"")
    h.plant(rollout_name(2), "rollout of only unknown types",
        "\n".join(_rollout_line(f"future_kind_{i}", {"x": i}) for i in range(20)) + "\n")
    big_line = _rollout("019c0000-0000-7000-8000-000000000003", "before the big line").rstrip("\n")
    big_line += "\n" + _rollout_line("response_item", {"type": "function_call_output", "call_id": "c1",
                                                       "output": "z" * 5_000_000})
    big_line += "\n" + _rollout_line("response_item", {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "bigrolloutmarker after the 5 MB line"}]}) + "\n"
    big = h.plant(rollout_name(3), "rollout with a 5 MB line", big_line)
    h.ok_anyway.add(str(big))
    h.survives[str(big)] = ["bigrolloutmarker"]
    deep_line = _rollout("019c0000-0000-7000-8000-000000000004", "deeprolloutmarker before").rstrip("\n")
    deep_line += "\n" + '{"timestamp":"2026-03-01T10:00:00.000Z","type":"response_item","payload":' \
        + _deep_json(DEEP) + "}\n"
    deep_rollout = h.plant(rollout_name(4), "rollout with a 100k-level nested line", deep_line)
    h.ok_anyway.add(str(deep_rollout))
    h.survives[str(deep_rollout)] = ["deeprolloutmarker"]
    h.plant(rollout_name(5), "binary rollout", b"\x00\x01\x02" + rng.randbytes(3000))
    h.plant(rollout_name(6), "rollout with NUL bytes and invalid UTF-8 in text",
        _rollout("019c0000-0000-7000-8000-000000000006", "nul\x00inside").encode()
        + b'{"timestamp":"x","type":"response_item","payload":{"type":"message","role":"user",'
          b'"content":[{"type":"input_text","text":"caf\xe9 \xff"}]}}\n')
    h.ok_anyway.add(str(rollout_name(6)))
    lone_rollout = h.plant(rollout_name(8), "rollout with a lone surrogate escape",
                       _rollout("019c0000-0000-7000-8000-000000000008", "lone LONE lonerolloutmarker",
                                "loneroutmarker second").replace("LONE", "\\udc80"))
    h.ok_anyway.add(str(lone_rollout))
    h.survives[str(lone_rollout)] = ["lonerolloutmarker", "loneroutmarker"]
    h.plant(sessions / "rollout-2026-03-01T10-00-07-019c0000-0000-7000-8000-000000000007.jsonl.zst",
        "a .zst that is not zstd", b"not zstd at all")
    logs = codex / "log"
    for i in range(3):
        h.plant(logs / f"events-{i}.jsonl", "unrelated JSONL in a Codex root",
            "\n".join(json.dumps({"level": "info", "msg": f"event {j}"}) for j in range(50)) + "\n")


def _claude(h: Hostile, rng: random.Random) -> None:
    """Claude transcripts: lone surrogates, empty, garbage, deeply nested, unrelated JSONL."""
    claude = h.roots["claude"]
    project = claude / "projects" / "-tmp-hostile"
    good = project / CLAUDE_GOOD.name
    copy_file(CLAUDE_GOOD, good)
    text = good.read_text()
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    for record in records:
        message = record.get("message")
        if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), str):
            message["content"] += " claudegoodmarker"
            break
    good.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    h.good[str(good)] = "claudegoodmarker"
    lone_claude = h.plant(project / "55555555-5555-4555-8555-555555555555.jsonl",
                      "Claude transcript with a lone surrogate escape",
                      "\n".join(json.dumps(r) for r in records).replace("claudegoodmarker", "lone LONE claudelonemarker")
                      .replace("LONE", "\\udc80") + "\n")
    h.ok_anyway.add(str(lone_claude))
    h.survives[str(lone_claude)] = ["claudelonemarker"]
    h.plant(project / "11111111-1111-4111-8111-111111111111.jsonl", "empty Claude transcript", b"")
    h.plant(project / "22222222-2222-4222-8222-222222222222.jsonl", "garbage Claude transcript",
        rng.randbytes(2000))
    h.plant(project / "33333333-3333-4333-8333-333333333333.jsonl", "deeply nested Claude record",
        _deep_json(DEEP) + "\n")
    h.plant(project / "44444444-4444-4444-8444-444444444444.jsonl", "unrelated JSONL as a transcript",
        "\n".join(json.dumps({"level": "debug", "n": j}) for j in range(10)) + "\n")
