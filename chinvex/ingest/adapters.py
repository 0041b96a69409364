"""Which adapters read which include list. Built-ins are listed here; third parties add
adapters through the entry-point group `chinvex.adapters` (an object or class with `name`,
`source_type`, `parser_version`, `include_key`, `enumerate` and `parse`)."""

from __future__ import annotations

from functools import lru_cache

from chinvex import plugins
from chinvex.models.sources import Adapter, complete

GROUP = "chinvex.adapters"

BUILTIN: dict[str, tuple[str, str | None]] = {
    # adapter name -> (module:class, include key it enumerates; None = parses only the
    # candidates another adapter hands it)
    "repo": ("chinvex_adapters.repo.adapter:RepoAdapter", "repos"),
    "notes": ("chinvex_adapters.notes.adapter:NotesAdapter", "note_roots"),
    "chat_export": ("chinvex_adapters.chat_export.adapter:ChatExportAdapter", "chat_roots"),
    # Codex: the app-server adapter enumerates the roots (listing threads through
    # `codex app-server`, or walking the files without it) and owns every Codex source; it
    # reads rollout files through cx_sessions_jsonl, which stays registered for direct use.
    "cx_appserver": (
        "chinvex_adapters.cx_appserver.adapter:CodexAppServerAdapter", "codex_session_roots"
    ),
    "cx_sessions_jsonl": ("chinvex_adapters.cx_sessions_jsonl.adapter:CodexRolloutAdapter", None),
    "claude_code": ("chinvex_adapters.claude_code.adapter:ClaudeCodeAdapter", "claude_session_roots"),
}


def _targets() -> dict[str, str]:
    """Every built-in adapter by name: the table above, then each agent's session adapter
    (chinvex_adapters.agents), which reads the stores `includes.sessions` resolves to and the
    files other adapters route to it by content."""
    from chinvex_adapters.agents import agents

    targets = {key: target for key, (target, _) in BUILTIN.items()}
    for name, agent in agents().items():
        targets.setdefault(name, agent.target)
    return targets


@lru_cache(maxsize=None)
def adapter(name: str) -> Adapter:
    obj = plugins.find(name, _targets(), GROUP)
    if obj is None:
        raise KeyError(name)
    return complete(obj() if isinstance(obj, type) else obj)


def adapters_for(include_key: str) -> list[str]:
    names = [name for name, (_, key) in BUILTIN.items() if key == include_key]
    for ep in plugins.group_entry_points(GROUP):
        if ep.name not in BUILTIN:
            try:
                if adapter(ep.name).include_key == include_key:
                    names.append(ep.name)
            except Exception:
                continue
    return names
