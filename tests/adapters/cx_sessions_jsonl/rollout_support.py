"""The Codex rollout adapter (`cx_sessions_jsonl`) against real and synthetic rollout files.

Fixture turn counts were established by reading the files (dump of type/payload.type per line,
plus `grep -c` of `"type":"user_message"`, `agent_message`, `agent_reasoning`,
`function_call`, `function_call_output`, call-id pairs) and applying the documented rules of
`chinvex_adapters/cx_sessions_jsonl/parser.py` by hand, before comparing with the parser.

What the rollout adapter's tests share: fixture paths, parsing, synthetic rollout lines.
"""

from __future__ import annotations

import atexit
import json
import re
import shutil
import tempfile
from pathlib import Path
import orjson
from hypothesis import strategies as st
from chinvex.models import ConversationDoc
from chinvex.models.sources import ParseReport, SourceCandidate, SourceError
from chinvex_adapters.cx_sessions_jsonl import CodexRolloutAdapter
from helpers import FIXTURES

FIX = FIXTURES / "codex-rollout"


ADAPTER = CodexRolloutAdapter()


LEGACY = FIX / "generated-0.169.0/legacy/sessions/2026/11/22/rollout-2026-11-22T02-29-41-01a20116-7f80-7e82-8754-e5125007d434.jsonl"


PAGINATED = FIX / "generated-0.169.0/paginated/sessions/2026/11/22/rollout-2026-11-22T02-29-22-01a20116-364e-7ac1-8d5a-b68a4dbbf7c6.jsonl"


ZST = FIX / "edge-cases/sessions/2026/11/22/rollout-2026-11-22T02-29-41-01a20116-7f80-7e82-8754-e5125007d434.jsonl.zst"


TRUNCATED = FIX / "edge-cases/truncated-last-line.jsonl"


CRLF = FIX / "edge-cases/crlf-and-blank-lines.jsonl"


CODEMIE = FIX / "public/codemie-code/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"


INCR = FIX / "public/codemie-code/incremental"


LOCALPUSH = FIX / "public/localpush/sessions/2026/02/23"


AGENT_SESSIONS = FIX / "public/agent-sessions"


def candidate(path: Path, root: Path | None = None) -> SourceCandidate:
    return SourceCandidate(source_uri=str(path), source_type="codex_session", adapter=ADAPTER.name,
                           root=str(root or path.parent), path=path)


def parse(path: Path, state: dict | None = None, root: Path | None = None) -> tuple[ConversationDoc, ParseReport]:
    report = ParseReport()
    docs = list(ADAPTER.parse(candidate(path, root), report, state))
    assert len(docs) == 1
    return docs[0], report


def dumps(turns) -> list[dict]:
    return [t.model_dump(mode="json") for t in turns]


def doc_fields(doc: ConversationDoc) -> tuple:
    return (doc.doc_id, doc.thread_id, doc.title, doc.created_at, doc.updated_at,
            doc.links.model_dump(mode="json"), doc.metadata, doc.source_uri)


def line(typ: str, payload: dict, ts: str = "2026-01-02T03:04:05.000Z") -> str:
    return json.dumps({"timestamp": ts, "type": typ, "payload": payload})


def meta_line(thread_id: str = "019b0000-0000-7000-8000-000000000001", **extra) -> str:
    payload = {"id": thread_id, "timestamp": "2026-01-02T03:04:00.000Z", "cwd": "/home/dev/proj",
               "originator": "codex_cli_rs", "cli_version": "0.120.0", "source": "cli",
               "model_provider": "openai", **extra}
    return line("session_meta", payload, "2026-01-02T03:04:00.500Z")


def ev(kind: str, **fields) -> str:
    return line("event_msg", {"type": kind, **fields})


def ri(kind: str, **fields) -> str:
    return line("response_item", {"type": kind, **fields})


def user_msg(text: str) -> list[str]:
    """A legacy user turn as Codex writes it: response copy, then the event."""
    return [ri("message", role="user", content=[{"type": "input_text", "text": text}]),
            ev("user_message", message=text, images=[], local_images=[])]


def write(path: Path, lines: list[str], trailing_newline: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + ("\n" if trailing_newline else ""), encoding="utf-8")
    return path


ROLLOUT_NAME = "rollout-2026-01-02T03-04-00-019b0000-0000-7000-8000-000000000001.jsonl"


# (file, total, roles, how it was counted)
EXPECTED = [
    (LOCALPUSH / "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl", 4,
     {"user": 1, "assistant": 2, "tool": 1},
     "preamble (lines 1-6, before task_started) is context; task: user_message, agent_reasoning, "
     "agent_message, 1 function_call whose output never came"),
    (LOCALPUSH / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl", 18,
     {"user": 1, "assistant": 12, "tool": 5},
     "1 user_message; 6 agent_reasoning + 6 agent_message (never adjacent); 5 call/output pairs"),
    (LOCALPUSH / "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl", 162,
     {"user": 1, "assistant": 43, "tool": 118},
     "one task; grep: 1 user_message, 26 agent_reasoning (no two in a row), 17 agent_message, "
     "118 function_call each with one function_call_output"),
    (CODEMIE, 44, {"user": 3, "assistant": 3, "tool": 38},
     "no task events: 3 user_message start 3 groups; 3 assistant messages; 16 reasoning items "
     "all with summary [] (no turn); 38 call/output pairs"),
    (INCR / "turn-1.jsonl", 2, {"user": 1, "assistant": 1},
     "user_message (response copy dropped) + agent_message (response copy dropped); empty reasoning"),
    (INCR / "turn-2.jsonl", 4, {"user": 2, "assistant": 2}, "turn-1 + one more identical task"),
    (INCR / "turn-spawn-skill.jsonl", 4, {"user": 1, "tool": 3},
     "1 user_message; exec_command call+output; spawn_agent call + collab_agent_spawn_end; "
     "wait_agent call + collab_waiting_end (merged by call_id)"),
    # small.jsonl, counted per group (0-based line numbers):
    #  0-3   user_message "List the files"                                   -> user 1
    #  4-19  task (ends at turn_aborted): agent_reasoning (response copy dropped), 7 tool slots
    #        (call-1 no output, call-2 pair, call-3 pair, ws-1, call-4, call-5, call-6),
    #        context_compacted                                               -> a1 t7 s1
    #  20-69 no task: orphan output of call-1; agent_message (response copy dropped); Plan item;
    #        3 compacted; inter-agent agent_message; 2 entered + 2 exited review (with review
    #        text); 14 tool slots - every trimmed call id reads '[trimmed for fixture]', so a
    #        piece joins the latest slot only when that slot lacks its role (call/output/event)
    #        and the error its task_complete carries                         -> a4 t14 s7
    #  70-83 user_message; error; 3 entered review; 2 interaction events; 1 compacted
    #                                                                        -> u1 t2 s5
    #  84-95 user_message; compacted; entered + exited review; 2 mcp events  -> u1 a1 t2 s2
    #  96-117 paginated task: UserMessage, 2 AgentMessage, empty Reasoning, 8 tool slots,
    #        compacted, inter-agent message                                  -> u1 a2 t8 s2
    (AGENT_SESSIONS / "small.jsonl", 62, {"user": 4, "assistant": 8, "tool": 33, "system": 17},
     "many sessions concatenated; see the per-group count above"),
    (AGENT_SESSIONS / "large.jsonl", 14, {"user": 6, "assistant": 7, "tool": 1},
     "no tasks: 'Start' (event + response copy = 1), then Step 1..5 as response messages, each "
     "answered 'Ok'; tool_call/tool_result pair; environment_context skipped"),
    (LEGACY, 7, {"user": 2, "assistant": 4, "tool": 1},
     "2 tasks: user, reasoning, exec_command, answer / user+image, reasoning, answer"),
    (PAGINATED, 14, {"user": 4, "assistant": 8, "tool": 1, "system": 1},
     "5 tasks from item_completed: 4x (user, reasoning, answer) + the tool call in task 2; the "
     "compaction task gives one 'Context compacted. Summary: …' turn (its response_item reply is not shown twice)"),
    (TRUNCATED, 7, {"user": 2, "assistant": 4, "tool": 1},
     "legacy minus its partial task_complete line: same 7 turns"),
    (CRLF, 0, {}, "first 6 legacy lines: set-up and injected context only"),
    (ZST, 7, {"user": 2, "assistant": 4, "tool": 1}, "zstd of the legacy rollout"),
]


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{200,}")


def _line_cuts(data: bytes, limit: int) -> list[int]:
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    if len(ends) > limit:
        step = len(ends) / limit
        ends = sorted({ends[int(i * step)] for i in range(limit)} | {ends[-1]})
    return [0] + ends


RESUME_FILES = [e[0] for e in EXPECTED if e[0].suffix == ".jsonl" and e[0] != TRUNCATED]


def _codex_home(tmp_path: Path) -> Path:
    home = tmp_path / ".codex"
    day = home / "sessions" / "2026" / "11" / "22"
    day.mkdir(parents=True)
    shutil.copy(LEGACY, day / LEGACY.name)
    shutil.copy(ZST, day / ZST.name)  # superseded by the plain sibling
    shutil.copy(PAGINATED, day / PAGINATED.name)
    shutil.copy(ZST, day / ZST.name.replace("7f80-7e82", "0000-7000"))  # zst without sibling
    (home / "archived_sessions" / "2026" / "01" / "01").mkdir(parents=True)
    shutil.copy(INCR / "turn-1.jsonl", home / "archived_sessions" / "2026" / "01" / "01"
                / "rollout-2026-01-01T00-00-00-a1b2c3d4-e5f6-7890-abcd-ef1234567890.jsonl")
    (home / "session_index.jsonl").write_text('{"id":"x","thread_name":"n","updated_at":"t"}\n')
    (home / "history.jsonl").write_text('{"session_id":"x","ts":1,"text":"hi"}\n')
    (home / "sessions" / "notes.txt").write_text("not jsonl")
    (home / "sessions" / "scratch").mkdir()
    (home / "sessions" / "scratch" / "skip-me.jsonl").write_text("{}\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "elsewhere.jsonl").write_text("{}\n")
    (home / "sessions" / "link-out").symlink_to(outside, target_is_directory=True)
    (home / "sessions" / "2026" / "loop").symlink_to(home / "sessions", target_is_directory=True)
    return home


_FUZZ_DIR = Path(tempfile.mkdtemp(prefix="cx_fuzz_"))


atexit.register(shutil.rmtree, _FUZZ_DIR, True)


def _parse_bytes(data: bytes, state: dict | None = None) -> ParseReport | None:
    """Only SourceError may escape; output must be strictly JSON-able."""
    path = _FUZZ_DIR / ROLLOUT_NAME
    path.write_bytes(data)
    report = ParseReport()
    try:
        docs = list(ADAPTER.parse(candidate(path), report, state))
    except SourceError:
        return None
    for doc in docs:
        orjson.dumps(doc.model_dump(mode="json"))
    orjson.dumps(report.state)
    return report


def _templates() -> list:
    out = []
    for p in (LEGACY, PAGINATED, CODEMIE, AGENT_SESSIONS / "small.jsonl", AGENT_SESSIONS / "large.jsonl",
              INCR / "turn-spawn-skill.jsonl"):
        for raw in p.read_bytes().splitlines():
            if 0 < len(raw) < 6000:
                out.append(orjson.loads(raw))
    return out


_TEMPLATES = _templates()


_scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True)
            | st.text(max_size=20) | st.sampled_from(["user", "assistant", "message", "input_text",
                                                       "data:image/png;base64,AAAA", "call_1", "Text"]))


_json = st.recursive(_scalars, lambda ch: st.lists(ch, max_size=4)
                     | st.dictionaries(st.text(max_size=8), ch, max_size=4), max_leaves=15)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


@st.composite
def _mutated_line(draw):
    """A real rollout line with up to 3 values replaced or keys deleted anywhere inside it."""
    obj = json.loads(json.dumps(draw(st.sampled_from(_TEMPLATES))))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(list(_paths(obj))))
        value = draw(_json)
        if not path:
            obj = value
            continue
        parent = obj
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = value
    return obj
