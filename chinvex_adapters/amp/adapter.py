"""The `amp` adapter: Amp (Sourcegraph, ampcode.com) threads, one JSON file per thread
(`T-<uuid>.json`) in `${XDG_DATA_HOME:-~/.local/share}/amp/threads/` and, for the VS Code
extension's earlier store, `<editor user dir>/globalStorage/sourcegraph.amp/threads3/`.

Amp rewrites a thread's whole file on every change (through a `.amptmp` file it renames), so a
thread is one candidate whose stat says whether it changed; the `.amptmp` partials are passed
over. A thread's document id is its `T-…` id: a copy of the same thread elsewhere (a debug dump,
the old extension store) is the same document, and the most recent copy writes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate, UnrecognisedSource
from chinvex.timeutil import iso_z, to_utc
from chinvex.files.walk import absolute_root
from chinvex_adapters.kit.jsonfile import read_json
from chinvex_adapters.kit.sessionfile import SessionFileAdapter, conversation
from chinvex_adapters.kit.sniff import head_bytes, json_shape
from chinvex_adapters.kit.text import as_str
from chinvex_adapters.kit.turns import ConversationBuilder
from chinvex_adapters.kit.walk import WalkEntry, walk
from chinvex_adapters.walked import source_candidate

from .thread import ThreadReader, trees, uri_path

AGENT = "amp"
LABEL = "Amp thread"
THREAD_ID = re.compile(r"^T-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
THREAD_FILE = re.compile(r"^(?:amp-thread-)?T-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}(?:-\d+)?\.json$")
"""`T-<uuid>.json` (the store), `amp-thread-T-<uuid>-<ms>.json` ("Show thread JSON" dumps)."""
MAX_THREAD_BYTES = 256 * 1024 * 1024
MAX_LISTED = 10


class AmpAdapter(SessionFileAdapter):
    name = AGENT
    label = LABEL
    parser_version = "amp_v1"

    def enumerate(self, root: Path, options: AdapterOptions) -> Iterator[SourceCandidate | SkippedSource]:
        root_abs = absolute_root(root)
        single = root_abs.is_file()  # a file the user named is tried whatever its name
        for entry in walk(root_abs, options.excludes):
            if entry.skip is not None:
                yield SkippedSource(str(entry.path), self.source_type, entry.skip, entry.detail)
                continue
            verdict = True if single else self.accepts(entry.rel, entry)
            if verdict is True:
                yield source_candidate(entry, source_type=self.source_type, adapter=self.name,
                                       root=str(root_abs), extra={})
            else:
                yield SkippedSource(str(entry.path), self.source_type, "ignored", str(verdict))

    def accepts(self, rel: str, entry: WalkEntry) -> bool | str:
        name = rel.replace("\\", "/").rsplit("/", 1)[-1]
        if name.endswith(".amptmp"):
            return "a thread being saved (Amp renames it when it is written)"
        if THREAD_FILE.match(name):
            return True
        return "not an Amp thread file (T-<id>.json)"

    def recognises(self, path: Path) -> bool:
        """A JSON object whose `id` is a `T-<uuid>` thread id beside `messages`/`created`/`v`;
        or, when a long first message hides the id from the first bytes, a `T-<uuid>.json`
        file holding `messages`."""
        if not path.name.lower().endswith(".json"):
            return False
        shape = json_shape(head_bytes(path))
        if shape.kind != "object":
            return False
        keys = set(shape.keys)
        if {"sessionId", "session_id", "sessionID"} & keys:
            return False
        thread_id = shape.scalars.get("id")
        if isinstance(thread_id, str) and THREAD_ID.match(thread_id):
            return bool({"messages", "created", "v"} & keys)
        return bool(THREAD_FILE.match(path.name)) and "messages" in keys and "id" not in keys

    def why_not(self, path: Path) -> str:
        try:
            if path.stat().st_size == 0:
                return "empty file"
        except OSError:
            pass
        return "not a JSON object with a T-<uuid> id and messages"

    def parse_file(self, path: Path, report: ParseReport, candidate: SourceCandidate | None,
                   previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        doc = read_thread(path, report)
        if doc is not None:
            yield doc


def read_thread(path: Path, report: ParseReport) -> ConversationDoc | None:
    """One thread file; None (counted) when it holds no message yet."""
    data = read_json(path, LABEL, max_bytes=MAX_THREAD_BYTES)
    if not isinstance(data, dict):
        raise UnrecognisedSource(f"{path}: not an {LABEL} (a JSON {type(data).__name__}, not an object)")
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise UnrecognisedSource(f"{path}: not an {LABEL} (no messages list)")
    thread_id = as_str(data.get("id"))
    if not (thread_id and thread_id.startswith("T-")):
        stem = path.name[: -len(".json")]
        if not THREAD_ID.match(stem):
            raise UnrecognisedSource(f"{path}: not an {LABEL} (no T-<uuid> thread id)")
        thread_id = stem
    workspace = trees(data)
    cwd = next((p for t in workspace if (p := uri_path(t.get("uri")))), None)
    builder = ConversationBuilder(report.counts, cwd=cwd)
    reader = ThreadReader(builder, report.counts)
    for index, message in enumerate(messages):
        reader.add(index, message)
    reader.finish()
    turns = builder.finish(to_utc(data.get("created")))
    if not any(t.role in ("user", "assistant") for t in turns):
        report.counts["threads_without_messages"] += 1
        return None
    model = builder.models.most_common(1)[0][0] if builder.models else _tag_model(data)
    return conversation(agent=AGENT, source_uri=str(path), thread_id=thread_id, turns=turns,
                        title=as_str(data.get("title")), cwd=cwd, model=model,
                        metadata=thread_metadata(data, workspace), models=list(builder.models))


def _initial(data: dict[str, Any]) -> dict[str, Any]:
    env = data.get("env") if isinstance(data.get("env"), dict) else {}
    return env.get("initial") if isinstance(env.get("initial"), dict) else {}


def _tag_model(data: dict[str, Any]) -> str | None:
    tags = _initial(data).get("tags")
    for tag in tags if isinstance(tags, list) else ():
        if isinstance(tag, str) and tag.startswith("model:"):
            return tag[len("model:"):] or None
    return None


def thread_metadata(data: dict[str, Any], workspace: list[dict[str, Any]]) -> dict[str, Any]:
    """The thread's facts besides its messages: mode, revision, workspace trees and their
    repositories, the client that wrote it, and the threads it came from."""
    out: dict[str, Any] = {}
    created = to_utc(data.get("created"))
    if created is not None:
        out["thread_created_at"] = iso_z(created)
    for key, name in (("v", "revision"), ("agentMode", "agent_mode"), ("archived", "archived"),
                      ("originThreadID", "origin_thread_id"), ("mainThreadID", "main_thread_id"),
                      ("forkPointIndex", "fork_point_index")):
        if data.get(key) is not None:
            out[name] = data[key]
    if isinstance(data.get("relationships"), list) and data["relationships"]:
        out["relationships"] = data["relationships"][:50]
    trees_out = []
    for tree in workspace[:MAX_LISTED]:
        repo = tree.get("repository") if isinstance(tree.get("repository"), dict) else {}
        item = {"name": as_str(tree.get("displayName")), "path": uri_path(tree.get("uri")),
                "repository": as_str(repo.get("url")), "ref": as_str(repo.get("ref")),
                "sha": as_str(repo.get("sha"))}
        trees_out.append({k: v for k, v in item.items() if v})
    if trees_out:
        out["workspace"] = trees_out
        if trees_out[0].get("repository"):
            out["repository"] = trees_out[0]["repository"]
    platform = _initial(data).get("platform")
    if isinstance(platform, dict):
        for key, name in (("client", "client"), ("clientVersion", "version"), ("clientType", "client_type"),
                          ("os", "os")):
            if as_str(platform.get(key)):
                out[name] = as_str(platform.get(key))
    tags = _initial(data).get("tags")
    if isinstance(tags, list) and tags:
        out["tags"] = [t for t in tags if isinstance(t, str)][:50]
    return out
