"""Human output of `blame` and `timeline`: consecutive lines with the same commit and session
grouped on one row, then each session with the request behind it and the chunks to cite."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chinvex import fmt


def _span(first: int, last: int) -> str:
    return f"{first}" if first == last else f"{first}-{last}"


def _commit(entry: dict[str, Any], has_git: bool) -> str:
    commit = entry["commit"]
    if commit:
        return f"{commit['sha'][:8]} {commit['date'][:10]} {commit['author']}: {commit['subject']}"
    return "not committed yet" if has_git else "(no git)"


def blame_text(report: dict[str, Any]) -> str:
    sessions = {s["doc_id"]: (n, s) for n, s in enumerate(report["sessions"], start=1)}
    which = "line" if report["first"] == report["last"] else "lines"
    lines = [f"{report['path']}  {which} {_span(report['first'], report['last'])}  (context {report['context']})", ""]
    groups: list[tuple[int, int, str, str]] = []
    for entry in report["lines"]:
        doc = entry["sessions"][0] if entry["sessions"] else None
        who = (f"[{sessions[doc][0]}] {sessions[doc][1]['agent']} {sessions[doc][1]['session_id'][:13]}"
               if doc else ("no session" if entry["text"].strip() else ""))
        what = _commit(entry, report["git"])
        if groups and groups[-1][1] == entry["line"] - 1 and groups[-1][2:] == (what, who):
            groups[-1] = (groups[-1][0], entry["line"], what, who)
        else:
            groups.append((entry["line"], entry["line"], what, who))
    width = max(len(_span(a, b)) for a, b, _, _ in groups)
    for first, last, what, who in groups:
        arrow = f"  <- {who}" if who else ""
        lines.append(f"  {_span(first, last):>{width}}  {what}{arrow}")
    if report["sessions"]:
        lines += ["", "Sessions"]
    for number, session in enumerate(report["sessions"], start=1):
        spans = _spans(session["lines"])
        lines.append(f"[{number}] {session['agent']} {session['session_id']}  {fmt.when(session['time'], missing='(no time)')}"
                     f"  explains line{'s' if len(session['lines']) > 1 else ''} {spans}")
        if session.get("title"):
            lines.append(f"    {session['title']}")
        if session.get("request"):
            lines.append(f"    asked (turn {session['request']['turn']}): {session['request']['text']}")
        for words in session.get("around") or []:
            lines.append(f"    said (turn {words['turn']}): {words['text']}")
        if session.get("chunk_ids"):
            lines.append(f"    cite: {', '.join(session['chunk_ids'])}")
    if report["unexplained"]:
        plural = "s" if len(report["unexplained"]) > 1 else ""
        lines += ["", f"No session explains line{plural} {_spans(report['unexplained'])}."]
    return "\n".join(lines)


def line_runs(numbers: Sequence[int]) -> list[tuple[int, int]]:
    """Line numbers as runs of consecutive lines: [3, 4, 5, 9] -> [(3, 5), (9, 9)]."""
    runs: list[tuple[int, int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    return runs


def _spans(numbers: list[int]) -> str:
    return ", ".join(_span(first, last) for first, last in line_runs(numbers))


def _clock(value: str | None) -> str:
    """An event's time of day as every human output writes times: `14:03 UTC`."""
    text = fmt.when(value, missing="")
    return text[11:] if len(text) > 11 else "--:--"


def timeline_text(report: dict[str, Any]) -> str:
    events = [event for day in report["days"] for event in day["events"]]
    width = max([len("commit"), *(len(e["agent"]) for e in events if e["kind"] != "commit")])
    indent = " " * (2 + len("--:-- UTC") + 2 + width + 2)
    lines: list[str] = []
    for day in report["days"]:
        lines.append(day["date"])
        for event in day["events"]:
            time = _clock(event.get("time"))
            if event["kind"] == "commit":
                files = f" ({fmt.counted(len(event['files']), 'file')})" if event["files"] else ""
                lines.append(f"  {time}  {'commit':<{width}}  {event['sha'][:8]} {event['author']}: {event['subject']}{files}")
                continue
            took = f" {event['duration_min']} min" if event.get("duration_min") is not None else ""
            lines.append(f"  {time}  {event['agent']:<{width}}  {event.get('title') or event['session_id']}{took}")
            if event.get("project"):
                lines.append(f"{indent}in {event['project']}")
            if event.get("first_request") and event["first_request"] != event.get("title"):
                lines.append(f"{indent}asked: {event['first_request']}")
            if event.get("files_edited"):
                shown = event["files_edited"][:8]
                more = len(event["files_edited"]) - len(shown)
                lines.append(f"{indent}edited: " + ", ".join(shown) + (f" (+{more} more)" if more > 0 else ""))
        lines.append("")
    if not lines:
        return "No session or commit in this period."
    return "\n".join(lines).rstrip()
