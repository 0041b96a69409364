"""RepoAdapter: every text file of a repository (or any folder) becomes one Document."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chinvex.ids import doc_id_for
from chinvex.models import Document
from chinvex.models.sources import (
    AdapterDefaults,
    AdapterOptions,
    ParseReport,
    SkippedSource,
    SourceCandidate,
)
from chinvex_adapters.kit import gitutil
from chinvex_adapters.kit.gitwalk import TOOL_STATE_DIRS, Reason
from chinvex_adapters.kit.scan import ScanResult, ScanSpec, check_root, scan
from chinvex_adapters.kit.textfile import (
    candidate_file,
    candidate_rel_path,
    mtime_datetime,
    note_replacements,
    read_candidate,
)
from chinvex_adapters.repo import histories
from chinvex_adapters.repo.languages import language_for

_SECRET_NAMES = frozenset({"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".netrc", ".pgpass"})
_SECRET_EXTENSIONS = (".pem", ".key", ".p12", ".pfx", ".keystore", ".jks")
_ENV_TEMPLATES = (".example", ".sample", ".template", ".dist", ".defaults")


def repo_name_rule(name: str) -> Reason | None:
    """Files skipped by name alone and never included back: likely credentials. (Lock files,
    minified bundles and the like are `generated`, decided in `generated.py`.)"""
    lower = name.lower()
    if (
        lower in _SECRET_NAMES
        or lower.endswith(_SECRET_EXTENSIONS)
        or ((lower == ".env" or lower.startswith(".env.")) and not lower.endswith(_ENV_TEMPLATES))
    ):
        return "secret", "likely credentials (keys, .env); never indexed"
    return None


REPO_SCAN = ScanSpec(
    source_type="repo", adapter="repo", kind="repository", use_git=True, name_rule=repo_name_rule,
    skip_dirs=TOOL_STATE_DIRS, detect_generated=True,
)


class RepoAdapter(AdapterDefaults):
    """Enumerates with `git ls-files` inside a work tree (so the user's ignore rules apply
    exactly), else by walking the folder with its .gitignore files."""

    name = "repo"
    source_type = "repo"
    parser_version = "repo_v1"
    include_key = "repos"

    def __init__(self) -> None:
        self._sha_cache: dict[str, str | None] = {}

    def enumerate(
        self, root: Path, options: AdapterOptions
    ) -> Iterator[SourceCandidate | SkippedSource]:
        """The repository's files, then its agents' chat histories (Aider, SpecStory), which
        their own adapters read as conversations."""
        root_abs = check_root(root, REPO_SCAN.kind)
        items, found = histories.split_histories(scan(root, options, REPO_SCAN, ScanResult()), root_abs)
        yield from items
        yield from histories.candidates(found | histories.probe(root_abs), root_abs)

    def _git_sha(self, candidate: SourceCandidate) -> str | None:
        if "git_sha" in candidate.extra:
            return candidate.extra["git_sha"]
        root = candidate.root
        if root not in self._sha_cache:
            self._sha_cache[root] = (
                gitutil.head_sha(root) if gitutil.in_work_tree(root) else None
            )
        return self._sha_cache[root]

    def parse(
        self, candidate: SourceCandidate, report: ParseReport, previous_state: dict[str, Any] | None
    ) -> Iterator[Document]:
        tf = read_candidate(candidate)
        note_replacements(candidate_file(candidate), tf, report)
        rel = candidate_rel_path(candidate)
        yield Document(
            doc_id=doc_id_for("repo", candidate.source_uri),
            source_type="repo",
            source_uri=candidate.source_uri,
            title=rel,
            created_at=None,
            updated_at=mtime_datetime(tf.mtime_ns),
            text=tf.text,
            metadata={
                "path": rel,
                "root": candidate.root,
                "language": language_for(rel.rpartition("/")[2]),
                "git_sha": self._git_sha(candidate),
                "size_bytes": tf.size_bytes,
                "encoding": tf.encoding,
            },
        )
