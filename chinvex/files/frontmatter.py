"""YAML front matter: only at the very start of a markdown text, between two `---` lines.

The one parser of front matter: notes, markdown chat exports, Claude Code memory files and the
markdown chunker (which turns the properties into chunk headers, see chunking/markdown.py) all
read it here, so they agree on where it ends and what it holds. The text is never cut (offsets
stay file offsets). Bad YAML is a warning, never a failure: the text is still indexed, just
without properties. `load_yaml` is the one safe way
to parse untrusted YAML.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any

import yaml

from chinvex.timeutil import as_utc, parse_iso

try:  # the C loader when libyaml is there (much faster); both are "safe" (no arbitrary objects)
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader

_OPEN = re.compile(r"\ufeff?---[ \t]*\r?\n")  # a BOM still in the text may precede it
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.MULTILINE)

# Budget for turning YAML into JSON: aliases can make a tiny document expand exponentially
# ("billion laughs") or refer to themselves.
MAX_NODES = 10_000
MAX_DEPTH = 32

MAX_NESTING = 1000
"""Front matter that may nest deeper is refused before any YAML parser sees it: libyaml's
composer recurses in C and overflows the C stack near 50k levels (SIGSEGV, which no `except`
catches), and its scanner takes quadratic time in flow nesting (100k levels: 30 s in C, minutes
in pure Python). Real front matter nests a few levels; only MAX_DEPTH levels are kept anyway."""

# A block indicator: `- `, `? ` or `: ` (or at the end of a line). Every block collection
# needs one, so their count bounds how many can start on one line.
_BLOCK_INDICATOR = re.compile(r"[-?:](?=[ \t]|$)", re.MULTILINE)
_FLOW_BRACKET = re.compile(r"[\[\]{}]")
_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")


class YAMLTooDeep(ValueError):
    """YAML that may nest deeper than MAX_NESTING levels (refused unparsed)."""


def nesting_bound(raw: str) -> int:
    """An upper bound on the nesting depth of YAML `raw`, without parsing it (pure, linear).

    Flow collections (`[`, `{`) nest at most as deep as the running count of opening minus
    closing brackets, quoted or not (counting brackets inside scalars too only loosens the
    bound). Block collections nest by indentation: an ancestor starts at a column no greater
    than its descendants', at most two per column (a sequence may sit at its parent key's
    column), and collections opened on the line itself each need an indicator. A flow
    collection holds no block collection, so the two bounds add up.
    """
    opens = raw.count("[") + raw.count("{")
    if opens <= MAX_NESTING:
        flow = opens
    else:
        flow = depth = 0
        for match in _FLOW_BRACKET.finditer(raw):
            depth = depth + 1 if match.group(0) in "[{" else max(depth - 1, 0)
            flow = max(flow, depth)
    block = 0
    for line in _LINE_BREAK.split(raw):
        body = line.lstrip(" ")
        if not body:
            continue
        indent = len(line) - len(body)
        block = max(block, 2 * (indent + 1) + len(_BLOCK_INDICATOR.findall(body)))
    return block + flow


def load_yaml(raw: str) -> Any:
    """`yaml.safe_load` that cannot crash the process or hang: YAMLTooDeep for text that may
    nest deeper than MAX_NESTING; yaml.YAMLError (and ValueError, TypeError, RecursionError for
    odd tags and values) as the parser raises them."""
    if nesting_bound(raw) > MAX_NESTING:
        raise YAMLTooDeep(f"front matter nests more than {MAX_NESTING} levels deep (not read)")
    return yaml.load(raw, Loader=_Loader)  # noqa: S506 - a safe loader


@dataclass
class FrontMatter:
    data: dict[str, Any] = field(default_factory=dict)
    end: int = 0  # offset of the first body character (0 when there is no front matter)
    present: bool = False
    error: str | None = None

    @property
    def is_properties(self) -> bool:
        """The block was read as a mapping (possibly empty, possibly cut short): its text is
        properties, not prose. False for YAML that failed or is a list or a scalar."""
        return self.present and (bool(self.data) or self.error is None)


def split_front_matter(text: str) -> FrontMatter:
    """Find and parse the front matter at offset 0 of `text` (after a BOM, if one is left)."""
    opening = _OPEN.match(text)
    if opening is None:
        return FrontMatter()
    closing = _CLOSE.search(text, opening.end())
    if closing is None:
        return FrontMatter()  # an unclosed '---' is a thematic break, not front matter
    raw = text[opening.end() : closing.start()]
    fm = FrontMatter(end=closing.end(), present=True)
    try:
        loaded = load_yaml(raw)
    except YAMLTooDeep as exc:
        fm.error = f"invalid YAML front matter: {exc}"
        return fm
    except yaml.YAMLError as exc:
        fm.error = f"invalid YAML front matter: {_one_line(exc)}"
        return fm
    except RecursionError:
        fm.error = "invalid YAML front matter: nested too deeply"
        return fm
    except (ValueError, TypeError) as exc:  # odd tags, dates out of range
        fm.error = f"invalid YAML front matter ({type(exc).__name__}: {str(exc)[:120]})"
        return fm
    if loaded is None:
        return fm
    if not isinstance(loaded, dict):
        fm.error = f"front matter is a {type(loaded).__name__}, not a mapping of properties"
        return fm
    budget = [MAX_NODES]
    fm.data = {str(_jsonable(k, budget, 0)): _jsonable(v, budget, 0) for k, v in loaded.items()}
    if budget[0] < 0:
        fm.error = "front matter is too large or self-referencing; some values were cut"
    return fm


def _one_line(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    # +2: YAML counts from 0, and the note's line 1 is the opening '---'
    where = f" (line {mark.line + 2}, column {mark.column + 1})" if mark is not None else ""
    return f"{problem}{where}"


def _jsonable(value: Any, budget: list[int], depth: int) -> Any:
    """Dates become ISO strings, anything else JSON cannot hold becomes a string."""
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        return None
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):  # YAML integers are unbounded; orjson writes 64 bits only
        return value if -(2**63) <= value < 2**64 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(_jsonable(k, budget, depth + 1)): _jsonable(v, budget, depth + 1)
                for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v, budget, depth + 1) for v in value]
    if isinstance(value, bytes):  # !!binary
        return f"<{len(value)} bytes>"
    return str(value)


def front_matter_date(value: Any) -> datetime | None:
    """A front matter date (`2024-03-01`, `2024-03-01T10:00`, `2024-03-01 10:00:00+02:00`)
    as UTC; None for free-form text. Numbers are not dates here (`date: 2024` is a year,
    not a unix time)."""
    if isinstance(value, datetime):
        return as_utc(value)
    if isinstance(value, date):
        return as_utc(datetime(value.year, value.month, value.day))
    if isinstance(value, str):
        text = value.strip()
        if not text or not text[:4].isdigit():
            return None
        return parse_iso(text)
    return None
