"""One goose session as a conversation, whichever file it came from.

The three places a session is written share goose's `Session` fields: a `sessions` row (JSON
columns as text: `model_config_json`, `recipe_json`, `extension_data`), an exported session
(the same as objects: `model_config`, `recipe`), and a legacy `.jsonl`'s first line (the older
`SessionMetadata`: `description`, `working_dir`, token counts). What they hold besides the
messages goes to the conversation's metadata.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import ParseReport
from chinvex.timeutil import iso_z, to_utc
from chinvex_adapters.kit.jsonl import loads_lenient
from chinvex_adapters.kit.sessionfile import conversation
from chinvex_adapters.kit.text import as_str, one_line
from chinvex_adapters.kit.turns import ConversationBuilder

from .messages import MessageReader

AGENT = "goose"
DEFAULT_NAMES = frozenset({"cli session", "acp session", "new chat", "new session", "untitled"})
"""Names goose gives a session before it names it from the conversation: not titles."""
TOKEN_FIELDS = ("total_tokens", "input_tokens", "output_tokens", "accumulated_total_tokens",
                "accumulated_input_tokens", "accumulated_output_tokens")
MAX_TODO_CHARS = 4000


def json_field(fields: dict[str, Any], *keys: str) -> Any:
    """The first of `keys` present, parsed when it is JSON text (a database column)."""
    for key in keys:
        value = fields.get(key)
        if isinstance(value, (str, bytes)) and value.strip()[:1] in ("{", "[", b"{", b"["):
            try:
                return loads_lenient(value.encode("utf-8") if isinstance(value, str) else value)
            except (ValueError, RecursionError):
                return None
        if value is not None:
            return value
    return None


def title_of(fields: dict[str, Any]) -> str | None:
    for key in ("name", "description"):
        value = as_str(fields.get(key))
        if value and value.lower() not in DEFAULT_NAMES:
            return one_line(value, 200) or None
    return None


def model_of(fields: dict[str, Any]) -> str | None:
    config = json_field(fields, "model_config", "model_config_json")
    return as_str(config.get("model_name")) if isinstance(config, dict) else None


def _extension_facts(fields: dict[str, Any], out: dict[str, Any]) -> None:
    data = json_field(fields, "extension_data")
    if not isinstance(data, dict):
        return
    todo = data.get("todo.v0")
    if isinstance(todo, dict) and isinstance(todo.get("content"), str) and todo["content"].strip():
        out["todo"] = todo["content"][:MAX_TODO_CHARS]
    enabled = data.get("enabled_extensions.v0")
    if isinstance(enabled, dict) and isinstance(enabled.get("extensions"), list):
        names = [as_str(e.get("name")) for e in enabled["extensions"] if isinstance(e, dict)]
        out["extensions"] = [n for n in names if n]


def session_metadata(fields: dict[str, Any], store: str) -> dict[str, Any]:
    """What a session's fields say besides its title, folder and model."""
    out: dict[str, Any] = {"store": store}
    for key, name in (("name", "session_name"), ("description", "description"),
                      ("session_type", "session_type"), ("provider_name", "provider"),
                      ("goose_mode", "goose_mode"), ("schedule_id", "schedule_id"),
                      ("thread_id", "goose_thread_id"), ("project_id", "project_id")):
        value = as_str(fields.get(key))
        if value:
            out[name] = value
    if fields.get("user_set_name") in (True, 1):
        out["user_set_name"] = True
    for key in ("created_at", "updated_at", "archived_at"):
        stamp = to_utc(fields.get(key))
        if stamp is not None:
            out[f"session_{key}"] = iso_z(stamp)
    tokens = {k: v for k in TOKEN_FIELDS if isinstance(v := fields.get(k), int) and not isinstance(v, bool)}
    if tokens:
        out["tokens"] = tokens
    cost = fields.get("accumulated_cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        out["accumulated_cost"] = cost
    config = json_field(fields, "model_config", "model_config_json")
    if isinstance(config, dict):
        out["model_config"] = {k: v for k, v in config.items() if k != "model_name"}
    recipe = json_field(fields, "recipe", "recipe_json")
    if isinstance(recipe, dict) and as_str(recipe.get("title")):
        out["recipe"] = as_str(recipe.get("title"))
    if isinstance(fields.get("message_count"), int):
        out["message_count"] = fields["message_count"]
    _extension_facts(fields, out)
    return out


def session_doc(fields: dict[str, Any], messages: Iterable[Any], *, thread_id: str, source_uri: str,
                store: str, report: ParseReport, extra: dict[str, Any] | None = None,
                fallback_ts: Any = None) -> ConversationDoc | None:
    """The conversation of one session, None (counted) when it has no message to show."""
    cwd = as_str(fields.get("working_dir"))
    builder = ConversationBuilder(report.counts, cwd=cwd)
    reader = MessageReader(builder, report.counts)
    for message in messages:
        reader.add(message)
    reader.finish()
    turns = builder.finish(to_utc(fields.get("created_at")) or to_utc(fallback_ts))
    if not any(t.role in ("user", "assistant") for t in turns):
        report.counts["sessions_without_messages"] += 1
        return None
    metadata = session_metadata(fields, store)
    metadata.update(extra or {})
    return conversation(agent=AGENT, source_uri=source_uri, thread_id=thread_id, turns=turns,
                        title=title_of(fields), cwd=cwd, model=model_of(fields), metadata=metadata)
