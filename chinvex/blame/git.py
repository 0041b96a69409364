"""What git says about a file and a repository, read through the `git` command (porcelain
formats, which git keeps stable for scripts). Every function answers None or [] when git is
missing or the path is not in a work tree: blame then works from the stored edits alone.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

UNCOMMITTED = "0" * 40
_TIMEOUT_S = 30


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str  # author date, ISO UTC
    author: str
    subject: str

    def as_json(self) -> dict[str, str]:
        return {"sha": self.sha, "date": self.date, "author": self.author, "subject": self.subject}


@dataclass(frozen=True)
class BlamedLine:
    line: int
    commit: Commit | None  # None: not committed yet
    path: str  # the file's path (relative to the repository) in that commit


def _git(args: list[str], cwd: Path) -> str | None:
    exe = shutil.which("git")
    if exe is None:
        return None
    try:
        done = subprocess.run([exe, *args], cwd=cwd, check=False, capture_output=True, timeout=_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, env=None)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", errors="replace")


def repo_root(path: Path) -> Path | None:
    """The work tree holding `path` (a file or folder), None outside one or without git."""
    folder = path if path.is_dir() else path.parent
    out = _git(["rev-parse", "--show-toplevel"], folder)
    return Path(out.strip()).resolve() if out and out.strip() else None


def _iso(epoch: str) -> str:
    """Seconds since the epoch as the index writes times (ISO UTC, milliseconds, `Z`)."""
    from chinvex.timeutil import iso_z

    return iso_z(datetime.fromtimestamp(int(epoch), tz=UTC)) or ""


def blame(root: Path, rel: str, first: int, last: int) -> list[BlamedLine] | None:
    """Lines `first..last` (1-based) of `rel` as `git blame` gives them, following renames;
    lines not committed yet have no commit. None when git cannot blame the file (untracked,
    no commit yet): every line is then uncommitted."""
    out = _git(["blame", "--porcelain", "-w", "-L", f"{first},{last}", "--", rel], root)
    if out is None:
        return None
    commits: dict[str, dict[str, str]] = {}
    lines: list[BlamedLine] = []
    current: dict[str, str] | None = None
    sha, final = "", 0
    for raw in out.split("\n"):
        if raw.startswith("\t"):
            info = commits[sha]
            commit = None if sha == UNCOMMITTED else Commit(
                sha=sha, date=_iso(info.get("author-time", "0")), author=info.get("author", ""),
                subject=info.get("summary", ""))
            lines.append(BlamedLine(line=final, commit=commit, path=info.get("filename", rel)))
            continue
        parts = raw.split(" ")
        if len(parts) >= 3 and len(parts[0]) == 40 and parts[1].isdigit() and parts[2].isdigit():
            sha, final = parts[0], int(parts[2])
            current = commits.setdefault(sha, {})
            continue
        if current is not None and raw:
            key, _, value = raw.partition(" ")
            current[key] = value
    return lines


def _git_date(iso: str) -> str:
    """An ISO time as git's date parser reads it without doubt."""
    moment = datetime.fromisoformat(iso).astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S +0000")


@dataclass(frozen=True)
class LoggedCommit:
    commit: Commit
    files: list[str]
    repo: str


def log(root: Path, since: str | None, until: str | None, limit: int = 2000) -> list[LoggedCommit]:
    """Commits of `root` authored in [since, until) (ISO times), newest first, with the files
    each changed."""
    args = ["log", f"--max-count={limit}", "--no-merges", "--name-only",
            "--format=%x1e%H%x1f%at%x1f%an%x1f%s"]
    if since:
        args.append(f"--since={_git_date(since)}")
    if until:
        args.append(f"--until={_git_date(until)}")
    out = _git(args, root)
    if not out:
        return []
    commits: list[LoggedCommit] = []
    for block in out.split("\x1e")[1:]:
        head, _, rest = block.partition("\n")
        fields = head.split("\x1f")
        if len(fields) != 4:
            continue
        sha, at, author, subject = fields
        files = [line for line in rest.splitlines() if line.strip()]
        commits.append(LoggedCommit(Commit(sha, _iso(at), author, subject), files, str(root)))
    return commits
