"""What a doctor run reports: one `Check` per concern (status, count, examples, whether
`--repair` can fix it), the `DoctorReport` of a run, and its rendering for a person."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


Status = Literal["ok", "warning", "error"]
MAX_EXAMPLES = 5


@dataclass
class Check:
    name: str
    status: Status = "ok"
    count: int = 0
    examples: list[str] = field(default_factory=list)
    repairable: bool = False
    repaired: bool = False
    message: str = ""

    def problem(self, status: Status, items: list[str], message: str, *, repairable: bool,
                count: int | None = None) -> "Check":
        self.status = status
        self.count = len(items) if count is None else count
        self.examples = items[:MAX_EXAMPLES]
        self.message = message
        self.repairable = repairable
        return self

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "count": self.count,
                "examples": self.examples, "repairable": self.repairable,
                "repaired": self.repaired, "message": self.message}


@dataclass
class DoctorReport:
    context: str
    checks: list[Check]
    repair: bool = False
    actions: list[str] = field(default_factory=list)
    """What --repair did, one line each."""

    @property
    def ok(self) -> bool:
        return all(c.status != "error" for c in self.checks)

    def as_json(self) -> dict[str, Any]:
        return {"context": self.context, "checks": [c.as_json() for c in self.checks],
                "ok": self.ok, "repair": self.repair, "actions": self.actions}


def format_report(report: DoctorReport) -> str:
    """The report for a person: one line per check, examples under problems and under ok checks
    that list something (the files passed over, which `stats` says doctor lists), dates readable
    (the messages keep ISO timestamps for --json)."""
    from rich.markup import escape

    from chinvex.fmt import dates_in

    marks = {"ok": "[green]ok[/green]   ", "warning": "[yellow]warn[/yellow] ",
             "error": "[red]ERROR[/red]"}
    lines = [f"doctor: context {escape(report.context)}"]
    for c in report.checks:
        note = " (repaired)" if c.repaired else (" (--repair can fix this)"
                                                 if c.repairable and c.status != "ok" and not report.repair
                                                 else "")
        count = f" [{c.count}]" if c.status != "ok" and c.count else ""
        lines.append(f"{marks[c.status]} {escape(c.name)}{count}: {escape(dates_in(c.message))}{escape(note)}")
        if c.status != "ok" or c.examples:  # an ok check with examples lists them (skipped files)
            for example in c.examples:
                lines.append(f"        {escape(dates_in(example))}")
    for action in report.actions:
        lines.append(f"repair: {escape(dates_in(action))}")
    lines.append("no problems found" if report.ok and all(c.status == "ok" for c in report.checks)
                 else ("only warnings" if report.ok else "problems remain"))
    return "\n".join(lines)
