"""The `cx_sessions_jsonl` adapter: Codex rollout files → one ConversationDoc per file.

Append-aware: a rollout grows while its session runs. The state stored after each parse says
where the last task began (`resume_offset`) and which turn it produced first
(`resume_turn_index`), with the parser context as it was there. The next parse of a plain
`.jsonl` that still has the same head and is not shorter restarts at that task — the last task
may have been incomplete when it was read — and yields only the turns from there on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chinvex.ids import sha256_hex, thread_doc_id
from chinvex.models import ConversationDoc, ConversationLinks
from chinvex.models.sources import (
    AdapterDefaults,
    AdapterOptions,
    ParseReport,
    SkippedSource,
    SourceCandidate,
    SourceError,
    UnrecognisedSource,
)
from chinvex.files.walk import absolute_root
from chinvex.fmt import counted, noun
from chinvex_adapters.walked import source_candidate, walked_sources

from .content import truncate_title
from .discover import COMPANION_FILES, Found, plain_sibling, thread_id_from_name, walk_jsonl
from .parser import RolloutParser, copy_context, new_context
from .reader import (
    HEAD_FINGERPRINT_BYTES,
    RolloutReadError,
    decode_json,
    head_fingerprint,
    is_compressed,
    iter_raw_lines,
    open_stream,
)
from .session_index import thread_name

STATE_VERSION = 1


class CodexRolloutAdapter(AdapterDefaults):
    name = "cx_sessions_jsonl"
    source_type = "codex_session"
    parser_version = "cx_sessions_jsonl_v3"  # v2: apply_patch edits as data; v3: tool output without escapes or control bytes, guardian reviews, compaction summaries, errors on task_complete
    include_key = "codex_session_roots"

    # -- enumerate ---------------------------------------------------------------------------

    def enumerate(self, root: Path, options: AdapterOptions) -> Iterator[SourceCandidate | SkippedSource]:
        """Every `*.jsonl[.zst]` under root; companions and superseded `.zst` are skipped.

        `options.max_file_bytes` is not applied: rollouts are streamed line by line and are
        routinely larger than any sensible limit for source files.
        """
        root_abs = absolute_root(root)
        if not root_abs.exists():
            raise SourceError(f"{root_abs}: Codex sessions folder not found")
        found = list(walk_jsonl(root_abs, options.excludes))
        present = {str(f.path) for f in found}
        yield from walked_sources(found, self.source_type,
                                  lambda f: self._source(f, str(root_abs), present))

    def _source(self, f: Found, root: str, present: set[str]) -> SourceCandidate | SkippedSource:
        """What a rollout-like file the walk kept becomes: a candidate, or why it is not one."""
        uri = str(f.path)
        if f.path.name in COMPANION_FILES:
            return SkippedSource(uri, self.source_type, "not_a_rollout", COMPANION_FILES[f.path.name])
        sibling = plain_sibling(f.path)
        if sibling is not None and str(sibling) in present:
            return SkippedSource(uri, self.source_type, "superseded",
                                 f"{sibling.name} exists; the plain file wins")
        return source_candidate(f, source_type=self.source_type, adapter=self.name, root=root,
                                thread_id=thread_id_from_name(f.path.name),
                                extra={"compressed": is_compressed(f.path)})

    # -- parse -------------------------------------------------------------------------------

    def parse(self, candidate: SourceCandidate, report: ParseReport,
              previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        path = candidate.path if candidate.path is not None else Path(candidate.source_uri)
        try:
            size = os.stat(path).st_size
        except OSError as exc:
            raise SourceError(f"{path}: cannot read ({exc.strerror or exc})") from None
        compressed = is_compressed(path)
        state = self._usable_state(previous_state, path, size, compressed, report)
        if state is not None:
            start, ctx = state["resume_offset"], copy_context(state["ctx"])
        else:
            start, ctx = 0, new_context()
        parser = RolloutParser(ctx, start, report.counts)
        consumed, partial = self._read(path, start, parser, report)
        resume_offset, resume_ctx = parser.finish()
        ctx = parser.ctx
        self._check_content(path, ctx, partial, report)

        head_len = min(HEAD_FINGERPRINT_BYTES, consumed + partial)
        report.state = {
            "v": STATE_VERSION,
            "parser_version": self.parser_version,
            "offset": consumed,
            "size": max(size, consumed + partial),
            "head_len": head_len,
            "head_sha256": head_fingerprint(path, head_len),
            "resume_offset": resume_offset,
            "resume_turn_index": resume_ctx["next_turn"],
            "compressed": compressed,
            "thread_id": ctx["thread_id"],
            "last_turn_id": ctx["last_turn_id"],
            "ctx": resume_ctx,
        }
        report.append_from = state["resume_turn_index"] if state is not None else None
        if partial:
            report.counts["partial_tail_bytes"] += partial
        yield self._document(path, candidate, ctx, parser)

    def _read(self, path: Path, start: int, parser: RolloutParser,
              report: ParseReport) -> tuple[int, int]:
        """Feed complete lines to the parser; returns (bytes consumed, partial tail bytes)."""
        consumed = start
        partial = 0
        try:
            with open_stream(path) as stream:
                if start:
                    stream.seek(start)
                for raw in iter_raw_lines(stream, start):
                    data = raw.data[:-1] if raw.data.endswith(b"\r") else raw.data
                    if not data.strip():
                        if raw.terminated:
                            consumed = raw.end
                            report.counts["lines_blank"] += 1
                        else:
                            partial = raw.end - raw.start
                        continue
                    obj, ok = decode_json(data)
                    if not raw.terminated and not (ok and isinstance(obj, dict)):
                        # Codex is still writing this line: leave it for the next run.
                        partial = raw.end - raw.start
                        break
                    if ok:
                        parser.feed(obj, raw.start, raw.end)
                    else:
                        parser.feed_invalid()
                    consumed = raw.end
        except RolloutReadError as exc:
            if parser.ctx["lines_seen"] == 0:
                raise SourceError(f"{path}: cannot decompress ({exc})") from None
            report.warnings.append(f"{path.name}: stopped reading at byte {consumed}: {exc}")
            report.counts["read_errors"] += 1
        except OSError as exc:
            raise SourceError(f"{path}: read error ({exc.strerror or exc})") from None
        return consumed, partial

    def _check_content(self, path: Path, ctx: dict[str, Any], partial: int, report: ParseReport) -> None:
        if ctx["lines_seen"] == 0:
            extra = f" (only a partial line of {partial} bytes so far)" if partial else ""
            raise UnrecognisedSource(f"{path}: not a Codex session yet (empty rollout{extra})")
        if ctx["n_session_meta"] == 0 and ctx["n_conversation_lines"] == 0:
            raise UnrecognisedSource(
                f"{path}: not a Codex rollout (no session_meta and no conversation records; "
                f"{ctx['n_unrecognised_lines']} unrecognised {noun(ctx['n_unrecognised_lines'], 'line')})"
            )
        if ctx["next_turn"] == 0:
            if ctx["n_unrecognised_lines"]:
                kinds = ", ".join(ctx["unknown_types"]) or "not JSON or no envelope"
                raise UnrecognisedSource(
                    f"{path}: not a Codex session (no conversation turns; "
                    f"{ctx['n_unrecognised_lines']} unrecognised {noun(ctx['n_unrecognised_lines'], 'line')}: "
                    f"{kinds}; a newer rollout "
                    "format?)"
                )
            if ctx["n_conversation_lines"]:
                raise UnrecognisedSource(
                    f"{path}: not a Codex session (no conversation turns; its "
                    f"{ctx['n_conversation_lines']} conversation {noun(ctx['n_conversation_lines'], 'record')} "
                    f"{'is' if ctx['n_conversation_lines'] == 1 else 'are all'} empty, duplicates or injected "
                    "context)"
                )
            report.warnings.append(f"{path.name}: no conversation turns yet (session set-up only)")
        unknown = report.counts.get("lines_unknown_type", 0)
        drift = report.counts.get("lines_drift", 0)
        if unknown or drift:
            report.warnings.append(
                f"{path.name}: skipped {counted(unknown, 'line')} of unknown type and {drift} unrecognised "
                f"{noun(drift, 'line')}"
            )

    def _usable_state(self, prev: dict[str, Any] | None, path: Path, size: int, compressed: bool,
                      report: ParseReport) -> dict[str, Any] | None:
        """The previous state if the file is the same one, grown (or not) by appends only."""
        if not prev:
            return None
        reason = _state_problem(prev, self.parser_version, size, compressed)
        if reason is None and head_fingerprint(path, prev["head_len"]) != prev["head_sha256"]:
            reason = "replaced"
        if reason is not None:
            report.counts[f"resume_rejected:{reason}"] += 1
            return None
        return prev

    def _document(self, path: Path, candidate: SourceCandidate, ctx: dict[str, Any],
                  parser: RolloutParser) -> ConversationDoc:
        meta = ctx["meta"]
        thread_id = (ctx["thread_id"] or candidate.thread_id or thread_id_from_name(path.name)
                     or f"file-{sha256_hex(os.path.abspath(path))[:32]}")
        name = thread_name(path, candidate.root or None, thread_id) or ctx["thread_name"]
        title = name or (truncate_title(ctx["first_user_text"]) if ctx["first_user_text"] else None)
        turns = parser.turns
        if is_guardian_review(meta):
            turns = review_requests_as_system(turns)
            title = name or GUARDIAN_TITLE
        era = ctx["era"]
        history_mode = meta.get("history_mode")
        if era == "C" and history_mode == "paginated":
            era = "D"
        metadata: dict[str, Any] = {
            "format_era": era,
            "history_mode": history_mode or {"C": "legacy", "D": "paginated"}.get(era or ""),
            "compressed": is_compressed(path),
        }
        for key, value in meta.items():
            if key not in ("created_at", "git", "history_mode"):
                metadata[key] = value
        if meta.get("git"):
            metadata["git"] = meta["git"]
        if ctx["models"]:
            metadata["models"] = list(ctx["models"])
        if name:
            metadata["thread_name"] = name
        for key in ("other_session_ids", "child_thread_ids"):
            if ctx[key]:
                metadata[key] = list(ctx[key])
        if ctx["token_usage"]:
            metadata["token_usage"] = ctx["token_usage"]
        if ctx["rollout_reference"]:
            metadata["rollout_reference"] = ctx["rollout_reference"]
        links = ConversationLinks(workspace_id=ctx["workspace_id"], repo_paths=list(ctx["repo_paths"]))
        if meta.get("git", {}).get("repository_url"):
            links = ConversationLinks(workspace_id=ctx["workspace_id"], repo_paths=list(ctx["repo_paths"]),
                                      repository_url=meta["git"]["repository_url"])
        return ConversationDoc(
            source="cx_sessions_jsonl",
            source_type=self.source_type,
            source_uri=str(path),
            doc_id=thread_doc_id(self.source_type, thread_id),
            thread_id=thread_id,
            title=title,
            created_at=ctx["created_at"],
            updated_at=ctx["updated_at"],
            turns=turns,
            links=links,
            metadata=metadata,
        )


GUARDIAN_TITLE = "Automatic approval review"


def is_guardian_review(meta: dict[str, Any]) -> bool:
    """Whether the rollout is one of Codex's automatic approval reviews ("auto-review", the
    guardian): `thread_source: "guardian_review"`, `source: {"subagent": {"other": "guardian"}}`.

    Codex (>= ~0.12x with `approvals_reviewer = "auto_review"`) starts such a thread beside the
    user's session for each batch of risky commands and writes it to its own rollout.
    """
    return (meta.get("thread_source") == "guardian_review"
            or meta.get("source_kind") in ("subagent:guardian", "subagent:other:guardian"))


def review_requests_as_system(turns: list[Any]) -> list[Any]:
    """A guardian thread's turns, its `user` messages given to `system`.

    Nobody typed those messages: Codex writes them, and each one copies the reviewed session's
    transcript ("The following is the Codex agent history whose request action you are
    assessing ... [1] user: ...") followed by the planned command. Kept as user turns, every
    review would repeat the user's own words as if said again, and title itself with the
    boilerplate. Their text stays searchable; the reviewer's verdicts stay assistant turns.
    """
    out = []
    for turn in turns:
        if turn.role == "user":
            turn = turn.model_copy(update={"role": "system",
                                           "meta": {**turn.meta, "kind": "review_request"}})
        out.append(turn)
    return out


def _state_problem(prev: dict[str, Any], parser_version: str, size: int, compressed: bool) -> str | None:
    """Why the previous state cannot be resumed from (a short code), or None if it can."""
    if not isinstance(prev, dict) or prev.get("v") != STATE_VERSION:
        return "state_version"
    if prev.get("parser_version") != parser_version:
        return "parser_changed"
    if compressed or prev.get("compressed"):
        return "compressed"  # a .zst is rewritten as a whole, never appended to
    ints = [prev.get(k) for k in ("offset", "resume_offset", "resume_turn_index", "head_len")]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in ints):
        return "malformed"
    if not isinstance(prev.get("head_sha256"), str) or prev["resume_offset"] > prev["offset"]:
        return "malformed"
    if size < prev["offset"]:
        return "truncated"
    ctx = prev.get("ctx")
    if not isinstance(ctx, dict):
        return "malformed"
    for key, default in new_context().items():
        if key not in ctx or (default is not None and type(ctx[key]) is not type(default)):
            return "malformed"
    if ctx["next_turn"] != prev["resume_turn_index"]:
        return "malformed"
    return None
