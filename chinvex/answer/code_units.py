"""Code evidence cut into units: a definition's signature with its docstring (its body kept
as the unit's extent), comment blocks, multi-line literals and statements, other non-trivial
lines alone; and the name a definition gives."""

from __future__ import annotations

import re

from chinvex.answer.units import Unit
from chinvex.retrieval.lexical import index_text

SQL_CREATE = r"(?i:create\s+(?:(?:temp|temporary|virtual|unique)\s+)?(?:table|trigger|index|view)\b)"
"""SQL's definitions: a schema statement defines a table, trigger, index or view by name."""
_CODE_SIGNATURE = re.compile(
    r"^\s*(?:@\w|(?:async\s+)?def\s|class\s|(?:export\s+)?(?:default\s+)?(?:async\s+)?function\b|"
    r"(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?fn\s|func\s|(?:export\s+)?(?:interface|type|enum|struct|"
    r"trait|impl)\b|(?:public|private|protected|static)\s|" + SQL_CREATE + ")"
)
DEFINED = re.compile(r"^\s*(?:export\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?"
                      r"(?:(?:def|class|fn|func|function|struct|interface|type|enum|trait|impl)\s+(\w+)|"
                      r"(?:const\s+|let\s+|var\s+)?([A-Z][A-Z0-9_]+)\s*(?::[^=\n]+)?=(?!=)|"
                      + SQL_CREATE + r"\s+(?i:if\s+not\s+exists\s+)?(\w+))", re.M)
"""A definition's name: `def`/`class`/`fn`/... NAME, an upper-case constant assigned, or the
table, trigger, index or view a SQL schema statement creates."""
_OPEN_LITERAL = re.compile(r"^\s*(?:export\s+)?(?:const\s+|let\s+|var\s+)?[A-Za-z_]\w*(?:\s*:\s*[^=]+)?\s*=\s*[\[{(]\s*(?:#.*)?$")
_COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*|--|;)")
_DOCSTRING_QUOTES = ('"""', "'''")
_TRIVIAL_CODE = re.compile(r"^[\s{}()\[\];,:.]*$|^\s*(?:pass|return|break|continue|else:|try:|\}\s*else\s*\{)\s*$")


def code_units(text: str, chunk: int) -> list[Unit]:
    """Signature + docstring together, comment blocks together, other non-trivial lines alone."""
    lines = text.splitlines()
    units: list[Unit] = []
    i = 0

    def add(start: int, end: int, through: int | None = None) -> None:
        body = "\n".join(lines[start:end + 1]).strip("\n")
        last = end if through is None else through
        if body.strip():
            whole = body if last == end else "\n".join(lines[start:last + 1])
            units.append(Unit(chunk=chunk, order=len(units), text=_dedent(body), analysed=index_text(whole),
                              kind="code", label=f"L{start + 1}" if start == last else f"L{start + 1}-{last + 1}",
                              line_start=start + 1, line_end=last + 1, extent=whole if last != end else ""))

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped or _TRIVIAL_CODE.match(line):
            i += 1
            continue
        if _CODE_SIGNATURE.match(line):
            end = i
            # a signature may span lines until its colon / brace
            while end + 1 < len(lines) and not re.search(r"[:{]\s*(#.*)?$|=>|;\s*$", lines[end]) and end - i < 6:
                end += 1
            doc_end = _docstring_end(lines, end + 1)
            head = doc_end if doc_end is not None else end
            add(i, head, through=_body_end(lines, i, head))
            i = head + 1
            continue
        opened = _OPEN_LITERAL.match(line)
        if opened:
            # a constant spelled over several lines (a dict, a list) is one statement
            end = _literal_end(lines, i)
            if end > i:
                add(i, end)
                i = end + 1
                continue
        if stripped.startswith(_DOCSTRING_QUOTES):
            doc_end = _docstring_end(lines, i)
            end = doc_end if doc_end is not None else i
            add(i, end)
            i = end + 1
            continue
        if _COMMENT.match(line):
            end = i
            while end + 1 < len(lines) and _COMMENT.match(lines[end + 1]) and lines[end + 1].strip():
                end += 1
            add(i, end)
            i = end + 1
            continue
        # a statement whose brackets stay open (a call, a raise with its message) runs on
        end = _literal_end(lines, i) if _bracket_balance(line) > 0 else i
        add(i, end)
        i = end + 1
    return units


def _body_end(lines: list[str], start: int, head: int) -> int:
    """The last line of the definition opened on line `start` whose signature and docstring end
    on `head`: the lines indented deeper than its signature that follow (as far as the chunk
    goes). A definition is quoted by its signature and docstring, but what its body does is
    part of what it is: `sniff_bytes` checks magic bytes and probes UTF-8 in its body."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    last = head
    for j in range(head + 1, len(lines)):
        line = lines[j]
        if not line.strip():
            continue
        if len(line) - len(line.lstrip()) <= indent:
            break
        last = j
    return last


def defined_name(text: str) -> str:
    """The name the first definition in `text` gives ("" when it defines none)."""
    match = DEFINED.search(text)
    return next((name for name in match.groups() if name), "") if match else ""


def _literal_end(lines: list[str], start: int, limit: int = 40) -> int:
    """The last line of a bracketed literal opened on line `start` (depth counted outside
    strings; `start` itself when it does not close within `limit` lines)."""
    depth = 0
    for j in range(start, min(len(lines), start + limit)):
        depth += _bracket_balance(lines[j])
        if depth <= 0:
            return j
    return start


def _bracket_balance(line: str) -> int:
    code = re.sub(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"|#.*$", "", line)
    return sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")


def _docstring_end(lines: list[str], start: int) -> int | None:
    """Index of the last line of a docstring starting at `start` (None if there is none)."""
    if start >= len(lines):
        return None
    opening = lines[start].strip()
    quote = next((q for q in _DOCSTRING_QUOTES if opening.startswith(q) or opening.startswith(("r" + q, "f" + q))), None)
    if quote is None:
        return None
    rest = opening.split(quote, 1)[1]
    if quote in rest:
        return start
    for j in range(start + 1, min(len(lines), start + 40)):
        if quote in lines[j]:
            return j
    return min(len(lines) - 1, start + 39)


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip()
