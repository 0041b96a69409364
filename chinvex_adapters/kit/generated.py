"""Generated, vendored and data files: what the repo adapter skips by default, and why.

A repository holds files no question is ever about: lock files, minified bundles, source
maps, tokenizer vocabularies, vendored dependencies, large JSON/CSV dumps. Indexed like prose
they crowd out the code (one 466 KB vocabulary became a fifth of this project's chunks) and
answer questions they have nothing to do with. Every rule here returns a one-line detail
saying which rule fired, so a skip is never silent; a context brings such files back with
`include_generated` (see `scan.py`).

Pure functions: a path, or a text sample of the file's first bytes, in; a detail out (None for
an ordinary file). The content rules look at the share of the sample that looks machine-made,
never at one extreme: a Python module with one long base64 constant is still code.
"""

from __future__ import annotations

import csv
import re

GENERATED = "generated"
"""The skip reason of every rule here; the detail says which rule."""

STATS_MIN_BYTES = 16_384
"""Statistical rules (line lengths, words, numbers) judge files of at least this size only: a
small file costs a few chunks at most, and a 40-line config or a 30-row CSV is worth them."""

RECORDS_MIN_BYTES = 65_536
"""JSON Lines files of at least this size are records (logs, datasets, recorded sessions)."""

EXTENDED_SAMPLE_BYTES = 65_536
"""How far the caller reads when the first 8 KB end inside one long line (see `wants_more`)."""

LONG_LINE = 1_000
"""Characters above which a line is long. Code and wrapped prose stay far below it; minified
code, source maps and compact JSON are one line of tens of thousands."""

MARKER_LINES = 10
"""Generated-code markers are looked for in the file's first lines only (a header comment)."""

LOCKFILES = frozenset(
    {
        "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb",
        "bun.lock", "cargo.lock", "poetry.lock", "pipfile.lock", "uv.lock", "pdm.lock",
        "composer.lock", "gemfile.lock", "go.sum", "go.work.sum", "flake.lock",
        "packages.lock.json", "podfile.lock", "mix.lock", "pubspec.lock", "deno.lock",
        "package.resolved", "conda-lock.yml", "gradle.lockfile", ".terraform.lock.hcl",
        "shrinkwrap.yaml",
    }
)
"""Machine-written dependency pins: large, repetitive, and never what a question is about."""

VENDORED_DIRS = frozenset(
    {
        "node_modules", "bower_components", "jspm_packages", "vendor", "third_party",
        "third-party", "dist", "build", "target", ".next", ".nuxt",
    }
)
"""Folders of other people's code or of build output, by their conventional names."""

VOCABULARY_NAMES = frozenset(
    {"tokenizer.json", "vocab.txt", "vocab.json", "merges.txt", "added_tokens.json"}
)
"""Tokenizer files of machine-learning models: one entry per token, no sentences."""

_VOCAB_STEM = re.compile(r"(?:^|[-_.])vocab(?:[-_.]|$)")

DATA_EXTENSIONS = {"json": "JSON", "geojson": "JSON", "csv": "CSV", "tsv": "TSV"}
RECORD_EXTENSIONS = frozenset({"jsonl", "ndjson"})


# ------------------------------------------------------------------------------ names


def vendored_folder(rel: str) -> str | None:
    """The first folder of the root-relative POSIX path `rel` (itself included) whose name
    marks vendored or built code, as the relative path of that folder."""
    parts = rel.split("/")
    for i, part in enumerate(parts):
        if part in VENDORED_DIRS:
            return "/".join(parts[: i + 1])
    return None


def vendored_detail(folder: str) -> str:
    return f"vendored folder `{folder.rpartition('/')[2]}/`"


def by_path(rel: str) -> str | None:
    """The rule a file's path alone decides: vendored folder, lock file, minified bundle,
    source map, vocabulary."""
    parent, _, name = rel.rpartition("/")
    folder = vendored_folder(parent) if parent else None
    if folder is not None:
        return vendored_detail(folder)
    return by_name(name)


def by_name(name: str) -> str | None:
    lower = name.lower()
    stem, dot, ext = lower.rpartition(".")
    if not dot or not stem:
        stem, ext = lower, ""
    if lower in LOCKFILES or ext in ("lock", "lockfile"):
        return "lock file"
    if ".min." in lower or (stem.endswith("-min") and ext in ("js", "mjs", "cjs", "css")):
        return "minified bundle"
    if ext == "map":
        return "source map"
    if (lower in VOCABULARY_NAMES or ext == "vocab"
            or (ext in ("txt", "json") and _VOCAB_STEM.search(stem))):
        return "vocabulary"
    return None


# ---------------------------------------------------------------------------- content

_COMMENT = re.compile(
    r"""^\s*(?:\#+!?|//+!?|/\*+!?|\*|--|;+|%+|<!--|\{-|\(\*|"{3}|'{3}|rem\s)\s*(.*)$""",
    re.IGNORECASE,
)
_MARKERS = (
    re.compile(r"@generated\b"),
    re.compile(r"\bgenerated\b.*\b(?:do not|don'?t|must not) (?:edit|modify|change)\b", re.I),
    re.compile(r"\b(?:do not|don'?t) (?:edit|modify)\b.*\bgenerated\b", re.I),
    re.compile(
        r"^(?:this |the )?(?:file |code |module |source )?(?:is |was |has been )?"
        r"(?:auto[- ]?generated|automatically generated|machine[- ]generated"
        r"|generated automatically)\b",
        re.I,
    ),
    re.compile(r"^(?:this|the) (?:file|code|module|source)(?: file)? (?:is|was|has been) generated\b",
               re.I),
)
_WORD = re.compile(
    r"(?<![A-Za-z0-9])(?=[A-Za-z0-9]{2,30}(?![A-Za-z0-9]))"  # a whole token of 2-30 chars
    r"[A-Za-z]+(?:[0-9][A-Za-z]*){0,2}(?![A-Za-z0-9])"  # letters, at most two digits
    r"|[^\W\d_\x00-\x7f]+"  # non-ASCII letters
)
_WIDE = re.compile(r"[^\W\d_\x00-\x7f]+")
_WHITESPACE = b" \t\r\n\f\v"
_LETTER_BYTES = bytes(range(65, 91)) + bytes(range(97, 123)) + bytes(range(128, 256))
_JSON_TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"(\s*:)?|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null'
)
_NUMBER = re.compile(r"[-+]?(?:\d[\d,_]*)?\.?\d+(?:[eE][-+]?\d+)?%?")
_ID = re.compile(r"(?=.*\d)[\w.:/#@+=-]+|[0-9a-fA-F-]{8,}")


def word_chars(text: str) -> int:
    """Characters that belong to words. An ASCII word is a run of letters of ordinary length,
    possibly with a digit or two (`utf8`, `V1Pod`); a base64 run, a hex digest or a number is
    not one. Non-ASCII letters always count: CJK text has no spaces between its words."""
    return sum(map(len, _WORD.findall(text)))


def visible_chars(text: str) -> int:
    return len("".join(text.split()))


def machine_long(line: str) -> bool:
    """A long line that is not prose. Prose has spaces between its words (or, in CJK
    scripts, is mostly letters); minified code, encoded data and compact JSON have neither,
    whatever the length of their identifiers."""
    if len(line) <= LONG_LINE:
        return False
    spaces = len(line) - visible_chars(line)
    wide = sum(map(len, _WIDE.findall(line)))
    return spaces < 0.08 * len(line) and wide < 0.5 * (len(line) - spaces)


def wants_more(text: str, size: int) -> bool:
    """Whether an incomplete sample ends inside a long line of a file the statistical rules
    judge: then only a longer sample can tell one long constant in ordinary code from a file
    that is long lines throughout."""
    if size < STATS_MIN_BYTES or len(text) >= size:
        return False
    last = text.rpartition("\n")[2]
    return len(last) > LONG_LINE


def by_content(text: str, *, name: str, size: int, complete: bool, sample_bytes: int) -> str | None:
    """The rule the file's first bytes (`text`, decoded from `sample_bytes` bytes; `complete`
    when that is the whole file of `size` bytes) decide: a generated-code marker, machine data,
    very long lines, a low share of words."""
    marker = generated_marker(text)
    if marker is not None:
        return marker
    if size < STATS_MIN_BYTES:
        return None
    ext = name.lower().rpartition(".")[2] if "." in name else ""
    scale = 1.0 if complete else size / max(sample_bytes, 1)
    records = json_lines(text, ext, size, complete, scale)
    if records is not None:
        return records
    kind = DATA_EXTENSIONS.get(ext)
    if kind is not None:
        data = (json_data if kind == "JSON" else table_data)(text, kind, scale, complete)
        if data is not None:
            return data
    lines = text.split("\n")
    return very_long_lines(lines, complete) or few_words(text, lines)


def generated_marker(text: str) -> str | None:
    """A header comment saying the file is generated: `@generated`, "Code generated by X. DO
    NOT EDIT.", "This file was automatically generated", "auto-generated by X"."""
    head = text[:4096]
    if "enerat" not in head and "ENERAT" not in head:
        return None  # the common case: two substring searches, no comment parsing
    for raw in head.split("\n", MARKER_LINES)[:MARKER_LINES]:
        match = _COMMENT.match(raw[:300])
        if match is None:
            continue
        comment = match.group(1)
        for pattern in _MARKERS:
            found = pattern.search(comment)
            if found is not None:
                return f"'{_marker_label(comment, found)}' marker"
    return None


def _marker_label(comment: str, found: re.Match[str]) -> str:
    if found.group(0) == "@generated":
        return "@generated"
    label = " ".join(comment.strip().rstrip("*/->").split())
    return label if len(label) <= 60 else label[:57] + "..."


def very_long_lines(lines: list[str], complete: bool) -> str | None:
    """At least half the (non-blank) lines, holding most characters, are long lines that are
    not prose (so one long constant in ordinary code does not count)."""
    if max(map(len, lines), default=0) <= LONG_LINE:
        return None  # the common case, decided in C
    lines = [line for line in lines if line.strip()]
    long_lines = [line for line in lines if len(line) > LONG_LINE]
    if 2 * len(long_lines) < len(lines):
        return None
    machine = [line for line in long_lines if machine_long(line)]
    if not machine or 2 * len(machine) < len(lines):
        return None
    if sum(map(len, machine)) < 0.8 * sum(map(len, lines)):
        return None
    longest = max(map(len, machine))
    if not complete and len(lines[-1]) == longest and machine_long(lines[-1]):
        return f"very long lines (longest over {longest:,} chars)"
    return f"very long lines (max {longest:,} chars)"


def few_words(text: str, lines: list[str]) -> str | None:
    """Encoded data, hex dumps, tables of numbers: few characters belong to words, on most
    lines (not just on one constant in otherwise ordinary code).

    Code and prose are mostly letters and have whitespace between tokens; a byte count (fast,
    in C) settles them, and only the rest is tokenised into words."""
    raw = text.encode("utf-8", "replace")
    visible_bytes = len(raw.translate(None, _WHITESPACE))
    if not visible_bytes:
        return None
    letters = len(raw) - len(raw.translate(None, _LETTER_BYTES))
    if letters >= 0.5 * visible_bytes and visible_bytes <= 0.9 * len(raw):
        return None
    words, visible = word_chars(text), visible_chars(text)
    if words >= 0.25 * visible:
        return None
    lines = [line for line in lines if line.strip()]
    wordless = sum(1 for line in lines if word_chars(line) < 0.2 * max(visible_chars(line), 1))
    if wordless < 0.6 * len(lines):
        return None
    return f"low share of words ({round(100 * words / visible)} % of characters in words)"


def _about(count: float, complete: bool) -> str:
    if complete:
        return f"{int(count):,}"
    rounded = int(float(f"{count:.2g}"))
    return f"about {rounded:,}"


def json_lines(text: str, ext: str, size: int, complete: bool, scale: float) -> str | None:
    """A large file of one JSON value per line: records written by a program."""
    if size < RECORDS_MIN_BYTES:
        return None
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    whole = lines if complete or text.endswith("\n") else lines[:-1]
    if ext not in RECORD_EXTENSIONS and len(whole) < 3:
        return None
    if not lines or sum(1 for line in lines if line[0] in "{[") < 0.9 * len(lines):
        return None
    records = max(len(whole), 1) * scale
    return f"machine data: JSON Lines, {_about(records, complete)} records"


def json_data(text: str, kind: str, scale: float, complete: bool) -> str | None:
    """Large JSON whose sample is mostly numbers, ids and keys (a vocabulary, a matrix, an
    index), not text values (translations, documents, descriptions)."""
    start = text.lstrip()[:1]
    if start not in ("[", "{"):
        return None
    numbers = keys = ids = texts = 0
    machine_chars = text_chars = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group(0)
        if match.group(1):  # a key
            keys += 1
            machine_chars += len(token)
        elif token[0] != '"':
            numbers += 1
            machine_chars += len(token)
        else:
            value = token[1:-1]
            if " " in value.strip() and word_chars(value) >= 0.5 * len(value):
                texts += 1
                text_chars += len(token)
            else:
                ids += 1
                machine_chars += len(token)
    values = numbers + ids + texts
    if values < 50 or text_chars >= 0.25 * (machine_chars + text_chars):
        return None
    container = "array" if start == "[" else "object"
    if numbers >= 0.5 * values:
        return f"machine data: JSON {container} of {_about(numbers * scale, complete)} numbers"
    share = round(100 * machine_chars / max(machine_chars + text_chars, 1))
    return (f"machine data: JSON {container} of {_about((values + keys) * scale, complete)} "
            f"keys and values, {share} % numbers/ids/keys")


def table_data(text: str, kind: str, scale: float, complete: bool) -> str | None:
    """A large CSV/TSV whose cells are mostly numbers and ids."""
    rows = text.split("\n")
    if not complete:
        rows = rows[:-1]  # the last row is cut
    rows = [row for row in rows if row.strip()]
    if len(rows) < 20:
        return None
    reader = csv.reader(rows[1:], delimiter="\t" if kind == "TSV" else ",")
    machine = total = 0
    try:
        for cells in reader:
            for cell in cells:
                cell = cell.strip()
                total += 1
                if not cell or _NUMBER.fullmatch(cell) or (" " not in cell and _ID.fullmatch(cell)):
                    machine += 1
    except csv.Error:
        return None
    if not total or machine < 0.7 * total:
        return None
    return (f"machine data: {kind} of {_about(len(rows) * scale, complete)} rows, "
            f"{round(100 * machine / total)} % numbers/ids")
