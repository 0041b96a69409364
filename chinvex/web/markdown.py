"""A conversation message rendered as the markdown it was written in, safely.

Raw HTML in a message is text, never markup (`html` off: markdown-it escapes it), and links
keep only the schemes markdown-it's validator allows (no `javascript:`, `vbscript:`, `file:`,
no `data:` but images, which are not rendered as images either: they become their alt text).
Query words are marked inside prose the same way as elsewhere in the UI (`Highlighter`); code
spans and fenced blocks stay monospace and unmarked, as written.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from chinvex.web.highlight import Highlighter

MAX_CHARS = 200_000


def _text(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """Prose: the highlighted, escaped form `render_message` stored on the token."""
    from markdown_it.common.utils import escapeHtml

    token = tokens[idx]
    return token.meta.get("marked") or escapeHtml(token.content)


def _parser() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table").enable("strikethrough")
    md.disable("image")  # an image from a chat message would be a request to any server
    md.add_render_rule("text", _text)
    return md


_MD: Any = None


def render_message(text: str, highlight: Highlighter) -> Markup:
    """`text` as HTML: markdown rendered, everything from the message escaped, query words
    marked in its prose. Very long messages are shown as plain text (rendering them would cost
    more than reading them)."""
    global _MD
    if len(text) > MAX_CHARS:
        return Markup('<pre class="text">') + highlight(text) + Markup("</pre>")
    if _MD is None:
        _MD = _parser()
    env: dict[str, Any] = {}
    tokens = _MD.parse(text, env)
    for token in tokens:
        for child in token.children or []:
            if child.type == "text":
                child.meta = {**(child.meta or {}), "marked": str(highlight(child.content))}
    return Markup('<div class="md">') + Markup(_MD.renderer.render(tokens, _MD.options, env)) + Markup("</div>")
