"""The agent sessions behind a file's lines, for the document page.

`chinvex.blame.service.blame` runs once per request over the whole file as it is on disk, on
the page's read-only connection (git blame and a few SQLite queries), and its report becomes
what the template shows: a panel with one entry per session (agent, short session id, title,
time, the user's request, the line ranges it explains, the turns of its edits) and, beside each
run of lines a session explains, a marker linking to the session's conversation page at the
turn of its edit. Lines no session explains get no marker.

Nothing here may break the page: a document that is not a local file gets no section, and a
file gone from disk, a binary or very large file or a failing blame become one line of `note`.
Everything shown is plain data: the template escapes it.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chinvex import fmt
from chinvex.blame.render import line_runs
from chinvex.errors import ChinvexError
from chinvex.web.render import segment, url

if TYPE_CHECKING:
    from chinvex.models import ContextConfig

log = logging.getLogger(__name__)

MAX_LINES = 5000
"""Files longer than this get a note instead of sessions (`chinvex blame PATH:FIRST-LAST` reads
any part of them)."""
MAX_BYTES = 2 * 1024 * 1024
SHORT_ID = 8
"""Characters of a session id shown at least; more when two shown sessions share them (UUIDv7
ids of sessions started the same minute do)."""
COLOURS = 6
"""Session colours in app.css (`.s0` ... `.s5`): a visual aid only, the markers carry text."""
NOT_SHOWN = "Sessions behind this file are not shown: "


@dataclass
class Range:
    first: int
    last: int
    href: str

    @property
    def label(self) -> str:
        return str(self.first) if self.first == self.last else f"{self.first}–{self.last}"


@dataclass
class EditView:
    turn: int
    op: str
    time: str | None
    href: str


@dataclass
class SessionView:
    key: int
    """Position in the panel (from 0), for the session's colour class."""
    doc_id: str
    agent: str
    session_id: str
    short_id: str
    title: str
    time: str | None
    turn: int | None
    """The turn of the session's first edit of this file (1-based), where its links land."""
    href: str
    request: str | None = None
    request_turn: int | None = None
    request_href: str | None = None
    edits: list[EditView] = field(default_factory=list)
    ranges: list[Range] = field(default_factory=list)
    line_count: int = 0

    @property
    def colour(self) -> str:
        return f"s{self.key % COLOURS}"

    @property
    def lines_label(self) -> str:
        return ", ".join(r.label for r in self.ranges)


@dataclass
class Marker:
    """What the column beside a line shows: the session whose edit wrote it (the best match
    first), the run of lines it belongs to, and whether this is the run's first line (which
    carries the link; the others carry the session's colour bar)."""

    session: SessionView
    first: bool
    run: Range
    others: list[SessionView] = field(default_factory=list)

    @property
    def title(self) -> str:
        s = self.session
        lines = "line" if self.run.first == self.run.last else "lines"
        text = f"{lines} {self.run.label}: {s.agent} session {s.session_id}"
        if s.title:
            text += f" ({s.title})"
        if s.turn is not None:
            text += f", edit at turn {s.turn}"
        if self.others:
            text += "; also matched by " + ", ".join(f"{o.agent} {o.short_id}" for o in self.others)
        return text


@dataclass
class Behind:
    path: str
    note: str | None = None
    """One line saying why no session is shown, or None."""
    sessions: list[SessionView] = field(default_factory=list)
    markers: dict[int, Marker] = field(default_factory=dict)
    unexplained: int = 0
    stale: bool = False
    """The file on disk no longer reads as the indexed text: markers are only on lines that
    still read the same."""


def local_file(source_uri: str | None) -> Path | None:
    """The document's file when its source is a local path (repository files, notes), else None
    (a memory, a URL)."""
    if not source_uri or "://" in source_uri:
        return None
    path = Path(source_uri).expanduser()
    return path if path.is_absolute() else None


def short_ids(ids: Sequence[str]) -> dict[str, str]:
    """Each id cut to the shortest length (at least SHORT_ID) that tells the given ids apart."""
    unique = list(dict.fromkeys(ids))
    width = SHORT_ID
    longest = max((len(i) for i in unique), default=0)
    while width < longest and len({i[:width] for i in unique}) < len(unique):
        width += 1
    cut: dict[str, str] = {}
    for i in unique:  # a cut inside a group of a UUID runs to its end: 01a2240a-5ee5, not 01a2240a-5
        end = width
        if width > SHORT_ID:
            while end < len(i) and i[end - 1] not in "-_" and i[end] not in "-_":
                end += 1
        cut[i] = i[:end].rstrip("-_") or i
    return cut


def _turn_link(context: str, session_id: str | None, doc_id: str, turn: int | None) -> str:
    if not session_id:
        return url(f"/document/{segment(doc_id)}", context=context)
    link = url(f"/conversation/{segment(session_id)}", context=context, turn=turn)
    return link + (f"#turn-{turn}" if turn is not None else "")


def _same(a: str | None, b: str | None) -> bool:
    return (a or "").rstrip() == (b or "").rstrip()


def _precheck(path: Path) -> str | None:
    """Why the file is not blamed, or None. Cheap: a stat, and reading a file blame reads anyway."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return f"{NOT_SHOWN}the file is no longer on disk."
    except OSError as exc:
        return f"{NOT_SHOWN}the file cannot be read ({exc.strerror or exc})."
    if path.is_dir():
        return f"{NOT_SHOWN}the path is a folder now."
    if size > MAX_BYTES:
        return f"{NOT_SHOWN}the file is {fmt.size(size)}; they are shown for files up to {fmt.size(MAX_BYTES)}."
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return f"{NOT_SHOWN}the file cannot be read ({exc.strerror or exc})."
    if b"\0" in raw[:8192]:
        return f"{NOT_SHOWN}a binary file."
    lines = raw.count(b"\n") + (0 if not raw or raw.endswith(b"\n") else 1)
    if lines > MAX_LINES:
        return (f"{NOT_SHOWN}the file has {lines:,} lines; they are shown for files up to {MAX_LINES:,} lines "
                "(`chinvex blame PATH:FIRST-LAST` reads any part).")
    return None


def sessions_behind(conn: sqlite3.Connection, config: ContextConfig, doc: Mapping[str, Any],
                    lines: Sequence[Any], *, start: int, window: int) -> Behind | None:
    """What the document page shows of the sessions behind the document's file: None when the
    document is not a local file. `lines` are all the indexed lines (`documents.Line`: number,
    text), `start` and `window` the part of them the page serves (links to lines outside it
    open that part)."""
    path = local_file(doc["source_uri"])
    if path is None:
        return None
    behind = Behind(path=str(path))
    behind.note = _precheck(path)
    if behind.note is not None:
        return behind
    from chinvex.blame.service import Target, blame_in

    try:
        report = blame_in(conn, config, Target(path=path, first=None, last=None))
    except ChinvexError as exc:
        behind.note = NOT_SHOWN + exc.message
        return behind
    except sqlite3.Error as exc:  # an index from before edits were recorded, a damaged one
        behind.note = f"{NOT_SHOWN}the index could not be read ({exc}); 'chinvex ingest' or 'chinvex doctor' may help."
        return behind
    except Exception as exc:  # a bug must not take the page down with it; the log has it
        log.exception("blame of %s failed", path)
        behind.note = f"{NOT_SHOWN}working them out failed ({type(exc).__name__})."
        return behind
    _fill(behind, report, lines, context=config.name, doc_id=doc["doc_id"], start=start, window=window)
    return behind


def _fill(behind: Behind, report: Mapping[str, Any], lines: Sequence[Any], *, context: str, doc_id: str,
          start: int, window: int) -> None:
    indexed = {line.number: line.text for line in lines}
    on_disk = {entry["line"]: entry for entry in report["lines"]}
    behind.stale = any(not _same(indexed.get(n), e["text"]) for n, e in on_disk.items()) or any(
        text.strip() for n, text in indexed.items() if n not in on_disk)
    # A line is marked when a session explains it and the page shows the same text there.
    marked = {n: e["sessions"] for n, e in on_disk.items() if e["sessions"] and _same(indexed.get(n), e["text"])}
    behind.unexplained = sum(1 for n in report.get("unexplained") or () if n not in marked)
    short = short_ids([s.get("session_id") or s["doc_id"] for s in report["sessions"]])
    last_shown = start + window - 1

    def line_link(first: int) -> str:
        if start <= first <= last_shown:
            return f"#L{first}"
        return url(f"/document/{segment(doc_id)}", context=context, **{"from": max(1, first - 200)}) + f"#L{first}"

    views: dict[str, SessionView] = {}
    for key, s in enumerate(report["sessions"]):
        session_id = s.get("session_id") or ""
        edits = sorted(s.get("edits") or [], key=lambda e: e["turn"])
        turn = edits[0]["turn"] if edits else None
        view = SessionView(
            key=key, doc_id=s["doc_id"], agent=str(s.get("agent") or "session"), session_id=session_id or s["doc_id"],
            short_id=short[session_id or s["doc_id"]], title=" ".join(str(s.get("title") or "").split()),
            time=s.get("time"), turn=turn, href=_turn_link(context, session_id, s["doc_id"], turn),
            edits=[EditView(e["turn"], str(e.get("op") or "edit"), e.get("time"),
                            _turn_link(context, session_id, s["doc_id"], e["turn"])) for e in edits])
        request = s.get("request")
        if request:
            view.request, view.request_turn = request.get("text"), request.get("turn")
            view.request_href = _turn_link(context, session_id, s["doc_id"], request.get("turn"))
        mine = [n for n in s.get("lines") or () if n in marked and marked[n][0] == s["doc_id"]]
        view.ranges = [Range(a, b, line_link(a)) for a, b in line_runs(mine)]
        view.line_count = len(mine)
        views[s["doc_id"]] = view
    behind.sessions = list(views.values())
    for view in behind.sessions:
        for run in view.ranges:
            for n in range(run.first, run.last + 1):
                others = [views[d] for d in marked[n][1:] if d in views]
                behind.markers[n] = Marker(view, n == run.first, run, others)
