"""Generated, vendored and data files are skipped by default (reason `generated`, with the rule
in the detail), ordinary files that merely look odd stay indexed, and a context's
`include_generated` globs bring files back on the next ingest.

The rules are pure (`adapters/repo/generated.py`); most tests still go through the real repo
adapter on real files, because what matters is what enumeration decides from the bytes it
reads (the first 8 KB, 64 KB when those end inside one long line).
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from chinvex.excludes import may_match_inside
from chinvex.ingest.summary import skip_lines
from chinvex.sources import AdapterOptions, SkippedSource, SourceCandidate
from chinvex_adapters.repo import RepoAdapter, generated
from conftest import assert_no_traceback, run_cli, run_cli_in_process

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def write(root: Path, rel: str, data: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def screen(root: Path, **settings) -> tuple[set[str], dict[str, tuple[str, str]]]:
    """Enumerate `root` with the real repo adapter: kept paths, and skipped path -> (reason,
    detail), relative to the root."""
    kept: set[str] = set()
    skipped: dict[str, tuple[str, str]] = {}
    options = AdapterOptions(context_name="t", excludes=settings.pop("excludes", []), settings=settings)
    for item in RepoAdapter().enumerate(root, options):
        rel = os.path.relpath(item.source_uri, root).replace(os.sep, "/")
        if isinstance(item, SkippedSource):
            skipped[rel] = (item.reason, item.detail)
        else:
            assert isinstance(item, SourceCandidate)
            kept.add(rel)
    return kept, skipped


# ------------------------------------------------------------------ realistic file contents

def python_module(functions: int = 60) -> str:
    parts = ['"""Billing helpers: invoices, taxes and the ledger export."""\n\nimport re\n']
    for i in range(functions):
        parts.append(
            f"\n\ndef invoice_total_{i}(lines, tax_rate=0.2):\n"
            f'    """Sum the invoice lines of batch {i} and add the tax."""\n'
            f"    subtotal = sum(line.amount for line in lines if line.batch == {i})\n"
            f"    return round(subtotal * (1 + tax_rate), 2)\n")
    return "".join(parts)


def base64_blob(size: int, seed: int = 1) -> str:
    return base64.b64encode(random.Random(seed).randbytes(size * 3 // 4)).decode()


def minified_js(size: int) -> str:
    parts, i = [], 0
    while sum(map(len, parts)) < size:
        parts.append(f"function a{i}(b,c){{return b.map(function(d){{return d*c+{i}}}).filter(Boolean)}}"
                     f"var e{i}=a{i}([1,2,3],{i % 7});")
        i += 1
    return "".join(parts)


def prose_paragraph(words: int, seed: int) -> str:
    vocab = ("the ledger export runs every night and writes one file per account so that the "
             "finance team can reconcile invoices against payments without asking engineering "
             "for a special query each month").split()
    rng = random.Random(seed)
    return " ".join(rng.choice(vocab) for _ in range(words)).capitalize() + "."


# ---------------------------------------------------------------------------- name rules


@pytest.mark.parametrize("rel, detail", [
    ("package-lock.json", "lock file"), ("yarn.lock", "lock file"), ("pnpm-lock.yaml", "lock file"),
    ("poetry.lock", "lock file"), ("Cargo.lock", "lock file"), ("Gemfile.lock", "lock file"),
    ("composer.lock", "lock file"), ("uv.lock", "lock file"), ("go.sum", "lock file"),
    ("sub/dir/flake.lock", "lock file"),
    ("static/jquery.min.js", "minified bundle"), ("css/site.min.css", "minified bundle"),
    ("app.js.map", "source map"), ("styles.css.map", "source map"),
    ("model/vocab.txt", "vocabulary"), ("tokenizer.json", "vocabulary"), ("merges.txt", "vocabulary"),
    ("spm.vocab", "vocabulary"), ("bert-base-vocab.txt", "vocabulary"),
    ("vendor/github.com/x/y.go", "vendored folder `vendor/`"),
    ("web/node_modules/react/index.js", "vendored folder `node_modules/`"),
    ("third_party/zlib/zlib.h", "vendored folder `third_party/`"),
    ("dist/app.js", "vendored folder `dist/`"), ("build/lib/x.py", "vendored folder `build/`"),
])
def test_name_rules(rel: str, detail: str) -> None:
    assert generated.by_path(rel) == detail


@pytest.mark.parametrize("rel", [
    "src/app.py", "README.md", "docs/vocabulary.md", "lock.py", "admin.js", "builder/x.py",
    "src/vendors.ts", "mapping.py", "sitemap.xml", "package.json", "Cargo.toml", "config.min",
])
def test_ordinary_names_are_not_generated(rel: str) -> None:
    assert generated.by_path(rel) is None


# ------------------------------------------------------------------------------ markers


@pytest.mark.parametrize("header", [
    "// Code generated by protoc-gen-go. DO NOT EDIT.\n// source: api.proto\n\npackage api\n",
    "# -*- coding: utf-8 -*-\n# Generated by the protocol buffer compiler.  DO NOT EDIT!\n",
    "/**\n * @generated SignedSource<<abc>>\n */\n",
    "# This file was automatically generated by tools/make_tables.py\n",
    "// auto-generated by bindgen 0.69\n",
    "<!-- This file is auto-generated; edit the template instead -->\n# API\n",
    '"""Autogenerated by the schema compiler."""\n',
])
def test_generated_markers(header: str) -> None:
    text = header + python_module(3)
    detail = generated.by_content(text, name="x", size=len(text), complete=True, sample_bytes=len(text))
    assert detail is not None and detail.endswith("marker"), detail


@pytest.mark.parametrize("text", [
    # a marker mentioned in code or prose, not a header comment saying this file is generated
    'MARKER = "@generated"\n' + python_module(3),
    "# Parse the auto-generated ids the API returns.\n" + python_module(3),
    "# Generated by Django 4.2 on 2024-05-01\n" + python_module(3),  # a migration: written by hand after
    python_module(12) + "\n# This file was automatically generated (too deep to be a header)\n",
    '"""Detect files a tool wrote.\n\n@generated markers, "Code generated ... DO NOT EDIT"\n"""\n',
])
def test_marker_mentions_are_not_markers(text: str) -> None:
    assert generated.by_content(text, name="x.py", size=len(text), complete=True,
                                sample_bytes=len(text)) is None


def test_marker_skips_a_real_file(tmp_path: Path) -> None:
    write(tmp_path, "api/service.pb.go",
          "// Code generated by protoc-gen-go. DO NOT EDIT.\n\npackage api\n\ntype Req struct{}\n")
    kept, skipped = screen(tmp_path)
    assert not kept
    assert skipped["api/service.pb.go"] == (
        "generated", "'Code generated by protoc-gen-go. DO NOT EDIT.' marker")


# ----------------------------------------------------------------------- content, on files


def test_content_rules_on_real_files(tmp_path: Path) -> None:
    rng = random.Random(7)
    write(tmp_path, "static/app.bundle.js", minified_js(300_000))
    write(tmp_path, "payload.txt", base64.encodebytes(rng.randbytes(30_000)).decode())
    write(tmp_path, "tables/crc.inc", "\n".join(
        ", ".join(f"0x{rng.randrange(256):02x}" for _ in range(12)) + "," for _ in range(600)))
    write(tmp_path, "data/embedding_ids.json", json.dumps(list(range(10_000, 22_000)), indent=0))
    write(tmp_path, "data/series.csv", "t,value,count\n" + "".join(
        f"{i},{rng.random():.6f},{rng.randrange(1000)}\n" for i in range(2_000)))
    write(tmp_path, "logs/events.jsonl", "".join(
        json.dumps({"ts": 1_700_000_000 + i, "event": "click", "user": f"u{i % 97}"}) + "\n"
        for i in range(2_000)))
    kept, skipped = screen(tmp_path)
    assert not kept, kept
    assert skipped == {
        "static/app.bundle.js": ("generated", "very long lines (longest over 65,536 chars)"),
        "payload.txt": ("generated", skipped["payload.txt"][1]),
        "tables/crc.inc": ("generated", "low share of words (0 % of characters in words)"),
        "data/embedding_ids.json": ("generated", "machine data: JSON array of about 12,000 numbers"),
        "data/series.csv": ("generated", skipped["data/series.csv"][1]),
        "logs/events.jsonl": ("generated", skipped["logs/events.jsonl"][1]),
    }
    assert skipped["payload.txt"][1].startswith("low share of words (")
    assert skipped["logs/events.jsonl"][1].startswith("machine data: JSON Lines, about ")
    assert skipped["data/series.csv"][1].startswith("machine data: CSV of about 2,")  # estimated
    assert skipped["data/series.csv"][1].endswith(" rows, 100 % numbers/ids")


def test_one_long_line_in_ordinary_code_stays_indexed(tmp_path: Path) -> None:
    """The hostile case: real source files with ONE very long line (a base64 constant early
    in the file, so the first 8 KB end inside it; or a long regex) are still code."""
    module = python_module(60)
    early = module.replace("import re\n", f'import re\n\nLOGO_PNG = "{base64_blob(40_000)}"\n', 1)
    late = module + f'\n\nFONT = "{base64_blob(30_000, seed=2)}"\n'
    words = [f"keyword{i}" for i in range(400)]
    regex = module.replace("import re\n", f'import re\n\nKEYWORDS = re.compile(r"\\b(?:{"|".join(words)})\\b")\n', 1)
    write(tmp_path, "src/assets.py", early)
    write(tmp_path, "src/fonts.py", late)
    write(tmp_path, "src/lexer.py", regex)
    assert max(map(len, early.splitlines())) > 40_000 and len(early) > 16_384
    kept, skipped = screen(tmp_path)
    assert kept == {"src/assets.py", "src/fonts.py", "src/lexer.py"}, skipped


def test_ordinary_files_stay_indexed(tmp_path: Path) -> None:
    """A normal README, a 40-line JSON config, a 30-row CSV (numbers only), prose written one
    paragraph per line, CJK prose (no spaces at all), and large JSON/CSV of text."""
    rng = random.Random(5)
    write(tmp_path, "README.md", "# Billing\n\nExports the ledger every night.\n\n## Usage\n\n"
          "Run `billing export --month 2024-05`.\n")
    config = {f"option_{i}": (i if i % 3 else f"value {i}") for i in range(38)}
    write(tmp_path, "config.json", json.dumps(config, indent=2))
    assert len((tmp_path / "config.json").read_text().splitlines()) == 40
    write(tmp_path, "rates.csv", "month,rate,count\n" + "".join(
        f"{i},{rng.random():.4f},{rng.randrange(100)}\n" for i in range(30)))
    write(tmp_path, "docs/design.md", "\n\n".join(
        f"## Part {i}\n\n" + "\n\n".join(prose_paragraph(260, 3 * i + j) for j in range(3))
        for i in range(5)))
    paragraphs = [line for line in (tmp_path / "docs/design.md").read_text().splitlines()
                  if line.strip() and not line.startswith("#")]
    assert len(paragraphs) == 15 and min(map(len, paragraphs)) > 1_000  # most lines are long
    cjk = "账本每晚导出一次，每个账户写一个文件，财务团队据此核对发票与付款。"
    write(tmp_path, "docs/说明.md", "\n\n".join(cjk * 60 for _ in range(6)))
    write(tmp_path, "i18n/en.json", json.dumps(
        {f"screen.{i}.help": prose_paragraph(12, i) for i in range(800)}, indent=2))
    write(tmp_path, "data/questions.csv", "id,question,answer\n" + "".join(
        f'{i},"{prose_paragraph(10, i)}","{prose_paragraph(14, i + 1)}"\n' for i in range(400)))
    assert (tmp_path / "i18n/en.json").stat().st_size > 40_000
    assert (tmp_path / "data/questions.csv").stat().st_size > 40_000
    kept, skipped = screen(tmp_path)
    assert not skipped, skipped
    assert len(kept) == 7


# ------------------------------------------------------------------ folders and include-back


def test_may_match_inside() -> None:
    assert may_match_inside(["**"], "vendor")
    assert may_match_inside(["*.js"], "vendor/lib")  # a slash-free pattern matches at any depth
    assert may_match_inside(["vendor/"], "vendor/lib")
    assert may_match_inside(["/vendor/keep/*.js"], "vendor")
    assert may_match_inside(["vendor/keep/*.js"], "vendor/keep")
    assert may_match_inside(["**/dist/*.js"], "web/dist")
    assert not may_match_inside(["vendor/keep/*.js"], "vendor/other")
    assert not may_match_inside(["docs/*.md"], "vendor")
    assert not may_match_inside(["!vendor/", "# a comment", ""], "vendor")


def _vendored_tree(root: Path) -> None:
    write(root, "src/app.py", "def main():\n    return 1\n")
    write(root, "tokenizer.json", '{"model": {"vocab": {"[PAD]": 0, "hello": 1}}}\n')
    write(root, "package-lock.json", '{"lockfileVersion": 3}\n')
    write(root, "vendor/keep/util.js", "export const util = 1;\n")
    write(root, "vendor/other.js", "export const other = 1;\n")
    write(root, "vendor/deep/a.js", "export const a = 1;\n")
    write(root, "node_modules/pkg/index.js", "module.exports = 1;\n")
    write(root, ".venv/lib/site.py", "x = 1\n")
    write(root, ".env", "TOKEN=abc\n")


def test_vendored_folders_are_reported_once(tmp_path: Path) -> None:
    _vendored_tree(tmp_path)
    kept, skipped = screen(tmp_path)
    assert kept == {"src/app.py"}
    assert skipped == {
        "tokenizer.json": ("generated", "vocabulary"),
        "package-lock.json": ("generated", "lock file"),
        "vendor": ("generated", "vendored folder `vendor/`"),
        "node_modules": ("generated", "vendored folder `node_modules/`"),
        ".venv": ("excluded_dir", ".venv/ is never indexed"),
        ".env": ("secret", "likely credentials (keys, .env); never indexed"),
    }


@pytest.mark.parametrize("use_git", [False, pytest.param(True, marks=needs_git)])
def test_include_generated_globs(tmp_path: Path, use_git: bool) -> None:
    root = tmp_path / "repo"
    _vendored_tree(root)
    if use_git:
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    # A glob that reaches inside vendor/ lists it: matching files come back, the others are
    # judged one by one, and subfolders no glob reaches are still pruned once.
    kept, skipped = screen(root, include_generated=["vendor/keep/*.js", "/package-lock.json"])
    assert kept == {"src/app.py", "vendor/keep/util.js", "package-lock.json"}
    assert skipped["vendor/other.js"] == ("generated", "vendored folder `vendor/`")
    assert skipped["vendor/deep"] == ("generated", "vendored folder `vendor/`")
    assert skipped["tokenizer.json"] == ("generated", "vocabulary")
    assert skipped["node_modules"][0] == "generated"
    # `**` brings every generated file back; tool state and credentials stay out.
    kept, skipped = screen(root, include_generated=["**"])
    assert kept == {"src/app.py", "tokenizer.json", "package-lock.json", "vendor/keep/util.js",
                    "vendor/other.js", "vendor/deep/a.js", "node_modules/pkg/index.js"}
    assert set(skipped) == {".venv", ".env"}
    # Excludes win over include_generated.
    kept, skipped = screen(root, include_generated=["**"], excludes=["vendor/"])
    assert skipped["vendor"][0] == "excluded" and not any(k.startswith("vendor/") for k in kept)


def test_malformed_include_glob_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "a.py", "x = 1\n")
    kept, skipped = screen(tmp_path, include_generated=["[z-a]", "vendor/"])
    assert kept == {"a.py"}
    assert skipped["."][0] == "invalid_pattern" and "include_generated" in skipped["."][1]


def test_skip_lines() -> None:
    assert skip_lines({"binary": 2, "generated": 5, "empty": 1}) == [
        "skipped 5 generated/data files (listed by ingest --verbose; context.json "
        "include_generated indexes them)",
        "not indexed: 2 binary, 1 empty",
    ]
    assert skip_lines({"generated": 1})[0].startswith("skipped 1 generated/data file (")
    assert skip_lines({}) == []


# ------------------------------------------------------------------ through the real CLI


def _ingest(context: str, *extra: str):
    result = run_cli_in_process("ingest", "--context", context, *extra)
    assert_no_traceback(result)
    assert result.code == 0, result
    return result


def _indexed(home: Path, context: str) -> set[str]:
    with sqlite3.connect(home / "indexes" / context / "hybrid.db") as conn:
        return {row[0] for row in conn.execute("SELECT source_uri FROM documents")}


def _set_include(home: Path, context: str, globs: list[str] | None) -> None:
    path = home / "contexts" / context / "context.json"
    data = json.loads(path.read_text())
    if globs is None:
        data.pop("include_generated", None)
    else:
        data["include_generated"] = globs
    path.write_text(json.dumps(data, indent=2))


def _cli_repo(root: Path) -> dict[str, str]:
    files = {
        "src/app.py": "def frobnicate(widget):\n    return widget.gadget()\n",
        "tokenizer.json": '{"model": {"vocab": {"[PAD]": 0, "zanzibar": 1}}}\n',
        "package-lock.json": '{"lockfileVersion": 3, "name": "zanzibar"}\n',
        "vendor/lib/util.js": "export function quokkaHelper() { return 1; }\n",
    }
    for rel, text in files.items():
        write(root, rel, text)
    return {rel: str(root / rel) for rel in files}


def test_include_generated_takes_effect_on_the_next_ingest(chinvex_home: Path, tmp_path: Path) -> None:
    uris = _cli_repo(tmp_path / "repo")
    assert run_cli_in_process("context", "create", "Gen", "--repo", str(tmp_path / "repo")).code == 0
    first = _ingest("Gen", "--json").json
    assert _indexed(chinvex_home, "Gen") == {uris["src/app.py"]}
    assert first["sources"]["skipped"]["generated"] == 3

    _set_include(chinvex_home, "Gen", ["vendor/"])
    second = _ingest("Gen", "--json").json
    assert second["sources"]["indexed"] == 1 and second["sources"]["skipped"]["generated"] == 2
    assert _indexed(chinvex_home, "Gen") == {uris["src/app.py"], uris["vendor/lib/util.js"]}
    hits = run_cli("search", "--context", "Gen", "quokkaHelper", "--json").json["results"]
    assert hits and hits[0]["source_uri"] == uris["vendor/lib/util.js"]

    _set_include(chinvex_home, "Gen", ["**"])
    third = _ingest("Gen", "--json").json
    assert third["sources"]["indexed"] == 2 and "generated" not in third["sources"]["skipped"]
    assert _indexed(chinvex_home, "Gen") == set(uris.values())

    _set_include(chinvex_home, "Gen", None)  # back to the default: they leave the index
    fourth = _ingest("Gen", "--json", "--verbose").json
    removed = {d["source_uri"]: d["reason"] for d in fourth["decisions"] if d["action"] == "removed"}
    assert removed == {uris[rel]: "generated" for rel in ("tokenizer.json", "package-lock.json",
                                                            "vendor/lib/util.js")}
    assert _indexed(chinvex_home, "Gen") == {uris["src/app.py"]}
    hits = run_cli("search", "--context", "Gen", "quokkaHelper", "--json").json["results"]
    assert {hit["source_uri"] for hit in hits} == {uris["src/app.py"]}


def test_verbose_lists_generated_files_and_the_summary_counts_them(chinvex_home: Path, tmp_path: Path) -> None:
    uris = _cli_repo(tmp_path / "repo")
    assert run_cli_in_process("context", "create", "Gen", "--repo", str(tmp_path / "repo")).code == 0
    out = _ingest("Gen", "--verbose").stdout
    assert f"excluded: generated  {uris['tokenizer.json']} (vocabulary)" in out
    assert f"excluded: generated  {uris['package-lock.json']} (lock file)" in out
    vendor = str(tmp_path / "repo" / "vendor")
    assert f"excluded: generated  {vendor} (vendored folder `vendor/`)" in out
    assert "skipped 3 generated/data files" in out, out
