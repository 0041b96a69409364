"""YAML front matter of markdown exports: split it off and read it without ever failing.

Exporters write front matter by string templates (pionxzh: `Source: https://…`, convoviz:
quoted scalars), so invalid YAML happens; it must not cost the file, only its metadata. YAML is
parsed by the notes adapter's `load_yaml`, which refuses pathological nesting before libyaml can
overflow the C stack or spend minutes on it.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from chinvex_adapters.notes.frontmatter import YAMLTooDeep, load_yaml

from .textutil import json_safe

_FENCE = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_CHAT_URL_ID = re.compile(r"/(?:c|chat|share|g/[^/]+/c)/([0-9a-fA-F][0-9a-fA-F-]{15,})")


def split_front_matter(text: str) -> tuple[dict[str, Any], str, str | None]:
    """(front matter dict, body, error). An unreadable block stays in the body and is reported."""
    match = _FENCE.match(text)
    if not match:
        return {}, text, None
    body = text[match.end():]
    try:
        data = load_yaml(match.group(1))
    except YAMLTooDeep as exc:
        return {}, body, f"invalid YAML front matter: {exc}"
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        return {}, body, f"invalid YAML front matter{where}"
    except (ValueError, TypeError, RecursionError) as exc:  # odd tags, overflowing dates
        return {}, body, f"invalid YAML front matter ({type(exc).__name__})"
    if data is None:
        return {}, body, None
    if not isinstance(data, dict):
        return {}, body, "front matter is not a mapping"
    return json_safe(data), body, None


def lookup(front: dict[str, Any], *names: str) -> Any:
    """Case- and separator-insensitive key lookup (`Create Time`, `create_time`, `created`)."""
    wanted = {n.lower().replace("_", "").replace(" ", "").replace("-", "") for n in names}
    for key, value in front.items():
        norm = str(key).lower().replace("_", "").replace(" ", "").replace("-", "")
        if norm in wanted and value not in (None, ""):
            return value
    return None


def conversation_id_from(front: dict[str, Any]) -> str | None:
    """conversation_id / id, else the id inside a ChatGPT URL (`source`, `chat_link`)."""
    value = lookup(front, "conversation_id", "conversationid", "chat_id", "id")
    if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
        return str(value).strip()
    for key in ("source", "chat_link", "link", "url"):
        url = lookup(front, key)
        if isinstance(url, str):
            match = _CHAT_URL_ID.search(url)
            if match:
                return match.group(1)
    return None

