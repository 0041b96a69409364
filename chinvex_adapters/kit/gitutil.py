"""The two questions chinvex asks git: which files belong to this tree, and what is HEAD.

git is driven as a subprocess (no library needed, and it applies the user's own ignore
configuration: nested .gitignore files, .git/info/exclude, core.excludesFile).
"""

from __future__ import annotations

import os
import subprocess

GIT_TIMEOUT_S = 60.0

# Variables that would point git at another repository than the one under `root`.
_REPO_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
             "GIT_COMMON_DIR", "GIT_NAMESPACE")


class GitError(Exception):
    """git is missing or refused; the message says why, in one line."""


def in_work_tree(root: str) -> bool:
    """True when `root` or one of its parents holds a `.git` (directory, or file for worktrees
    and submodules). Checked on disk so that a tree outside git never starts a subprocess."""
    current = os.path.abspath(root)
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REPO_ENV}
    env["GIT_OPTIONAL_LOCKS"] = "0"  # never take index.lock behind the user's back
    env["LC_ALL"] = "C"
    return env


def _run(root: str, *args: str) -> bytes:
    try:
        proc = subprocess.run(
            ["git", "-C", root, *args], capture_output=True, env=_env(), timeout=GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise GitError("git is not installed (not on PATH)") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} took longer than {GIT_TIMEOUT_S:.0f}s") from None
    except OSError as exc:
        raise GitError(f"git could not be started ({exc.strerror or exc})") from None
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        first = next((line for line in message if line.strip()), f"exit code {proc.returncode}")
        raise GitError(f"git {args[0]} failed: {first.strip()}")
    return proc.stdout


def ls_files(root: str) -> list[bytes]:
    """Tracked and untracked-but-not-ignored paths under `root`, relative to it, as raw bytes.

    Run from `root`, so a root that is a sub-folder of a work tree lists only its own files.
    Untracked nested repositories come back as one entry ending in '/'.
    """
    out = _run(root, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    seen: set[bytes] = set()
    paths: list[bytes] = []
    for raw in out.split(b"\x00"):
        if raw and raw not in seen:  # unmerged paths are listed once per stage
            seen.add(raw)
            paths.append(raw)
    return paths


def head_sha(root: str) -> str | None:
    """HEAD's commit, or None (not a repository, no commit yet, git missing)."""
    try:
        sha = _run(root, "rev-parse", "--verify", "--quiet", "HEAD").decode("ascii", "replace")
    except GitError:
        return None
    sha = sha.strip()
    return sha or None
