"""YAML front matter of markdown exports, read without ever failing.

Exporters write front matter by string templates (pionxzh: `Source: https://…`, convoviz:
quoted scalars), so invalid YAML happens; it must not cost the file, only its metadata. The
block is found and parsed by `chinvex.files.frontmatter`, the parser notes and the markdown chunker
use too (it refuses pathological nesting before libyaml can overflow the C stack or spend
minutes on it); this module adds what only chat exports need: lenient key lookup and the
conversation id.
"""

from __future__ import annotations

import re
from typing import Any

from chinvex.files.frontmatter import split_front_matter as _parse

from chinvex_adapters.kit.text import json_safe

_CHAT_URL_ID = re.compile(r"/(?:c|chat|share|g/[^/]+/c)/([0-9a-fA-F][0-9a-fA-F-]{15,})")


def split_front_matter(text: str) -> tuple[dict[str, Any], str, str | None]:
    """(front matter dict, body, error). The body starts after the block even when its YAML
    could not be read (the error says why); text without front matter is all body."""
    fm = _parse(text)
    if not fm.present:
        return {}, text, None
    return json_safe(fm.data), text[fm.end:], fm.error


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

