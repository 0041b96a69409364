"""Code chunking with tree-sitter: symbols, headers, merging, splitting, fallbacks, real files."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from chinvex.chunking import chunk_document, embed_text
from chinvex.chunking.base import MAX_TOKENS
from chinvex.chunking.validate import chunk_problems
from chinvex.embedding.tokenizer import count_tokens_batch
from chinvex.models.documents import Document
from helpers import FIXTURES as SAMPLES, REPO_ROOT, TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "chunking"


def doc_for(text: str, path: str, **meta) -> Document:
    return Document(
        doc_id="code-doc",
        source_type="repo",
        source_uri=f"/abs/{path}",
        text=text,
        metadata={"path": path, **meta},
    )


def chunks_of(text: str, path: str, **meta):
    chunks = chunk_document(doc_for(text, path, **meta))
    assert chunk_problems(text, chunks) == []
    return chunks


def all_symbols(chunks) -> list[str]:
    seen: list[str] = []
    for c in chunks:
        for s in c.metadata["symbols"]:
            if s not in seen:
                seen.append(s)
    return seen


# --- small sources: names, qualified names ------------------------------------------------------

EXPECTED_SYMBOLS = {
    "sample.py": ["helper", "Point", "Point.norm", "Point.fetch", "Outer", "Outer.Inner", "Outer.Inner.deep"],
    "sample.js": [
        "add", "Greeter", "Greeter.constructor", "Greeter.greet", "Greeter.handle", "square",
        "default", "default.run",
    ],
    "sample.ts": [
        "Shape", "Shape.area", "Id", "Color", "Geometry", "Geometry.origin", "Base", "Base.area",
        "Base.describe", "scale",
    ],
    "sample.tsx": ["Props", "Card", "List"],
    "sample.go": ["Server", "Server.Start", "Server.Addr2", "New", "Handler"],
    "sample.rs": [
        "Point", "Point::fmt", "Point::new", "Shape", "Shape::area", "geometry",
        "geometry::origin", "square", "Kind", "MAX",
    ],
}

LANGUAGES = {"py": "python", "js": "javascript", "ts": "typescript", "tsx": "tsx", "go": "go", "rs": "rust"}


@pytest.mark.parametrize("name", sorted(EXPECTED_SYMBOLS))
def test_small_file_symbols(name):
    text = (FIXTURES / name).read_text(encoding="utf-8")
    chunks = chunks_of(text, f"src/{name}")
    assert all_symbols(chunks) == EXPECTED_SYMBOLS[name]
    # a small file is one merged chunk naming the file
    assert len(chunks) == 1
    meta = chunks[0].metadata
    assert meta["header"] == f"src/{name}"
    assert meta["kind"] == "code" and meta["chunker"] == "tree-sitter"
    assert meta["language"] == LANGUAGES[name.rsplit(".", 1)[1]]


# --- bigger sources: each method its own chunk, with a header naming its place ------------------


def body(lang: str, n: int, indent: str) -> str:
    """n statement lines of about 14 tokens each."""
    lines = []
    for i in range(n):
        if lang == "python":
            lines.append(f'{indent}value_{i} = compute_thing({i}, "label {i}", flag=True)')
        elif lang in ("javascript", "typescript"):
            lines.append(f'{indent}const value_{i} = computeThing({i}, "label {i}", true);')
        elif lang == "go":
            lines.append(f'{indent}value{i} := computeThing({i}, "label {i}", true)')
            lines.append(f"{indent}_ = value{i}")
        elif lang == "rust":
            lines.append(f'{indent}let value_{i} = compute_thing({i}, "label {i}", true);')
    return "\n".join(lines)


BIG = {
    "python": (
        "big.py",
        "import os\n\n\nclass Fuser:\n    \"\"\"Blends scores.\"\"\"\n\n    def blend(self):\n{B}\n\n"
        "    def rank(self):\n{B}\n\n\ndef helper():\n{B}\n",
        "    " * 2,
        [("big.py · class Fuser · def blend", "Fuser.blend"), ("big.py · class Fuser · def rank", "Fuser.rank"),
         ("big.py · def helper", "helper")],
    ),
    "javascript": (
        "big.js",
        "class Fuser {\n  blend() {\n{B}\n  }\n\n  rank() {\n{B}\n  }\n}\n\nfunction helper() {\n{B}\n}\n",
        "    ",
        [("big.js · class Fuser · method blend", "Fuser.blend"), ("big.js · class Fuser · method rank", "Fuser.rank"),
         ("big.js · function helper", "helper")],
    ),
    "typescript": (
        "big.ts",
        "export class Fuser {\n  blend(): void {\n{B}\n  }\n\n  rank(): void {\n{B}\n  }\n}\n\n"
        "export const helper = (): void => {\n{B}\n};\n",
        "    ",
        [("big.ts · class Fuser · method blend", "Fuser.blend"), ("big.ts · class Fuser · method rank", "Fuser.rank"),
         ("big.ts · function helper", "helper")],
    ),
    "go": (
        "big.go",
        "package fuse\n\nimport \"fmt\"\n\nfunc (f *Fuser) Blend() {\n{B}\n}\n\n"
        "func (f Fuser) Rank() {\n{B}\n}\n\nfunc Helper() {\n{B}\n}\n",
        "\t",
        [("big.go · func (*Fuser) Blend", "Fuser.Blend"), ("big.go · func (Fuser) Rank", "Fuser.Rank"),
         ("big.go · func Helper", "Helper")],
    ),
    "rust": (
        "big.rs",
        "struct Fuser;\n\nimpl Fuser {\n    fn blend(&self) {\n{B}\n    }\n\n    fn rank(&self) {\n{B}\n    }\n}\n\n"
        "mod util {\n    pub fn helper() {\n{B}\n    }\n\n    pub fn other() {\n{B}\n    }\n}\n",
        "        ",
        [("big.rs · impl Fuser · fn blend", "Fuser::blend"), ("big.rs · impl Fuser · fn rank", "Fuser::rank"),
         ("big.rs · mod util · fn helper", "util::helper")],
    ),
}


@pytest.mark.parametrize("lang", sorted(BIG))
def test_members_of_a_big_class_get_their_own_headers(lang):
    path, template, indent, expected = BIG[lang]
    text = template.replace("{B}", body(lang, 11, indent))
    chunks = chunks_of(text, path)
    by_header = {c.metadata["header"]: c for c in chunks}
    for header, symbol in expected:
        assert header in by_header, (header, list(by_header))
        assert symbol in by_header[header].metadata["symbols"]
        assert by_header[header].metadata["symbols"][0] == symbol


def test_decorators_comments_and_attributes_travel_with_their_definition():
    py = "import x\n\n\n@decorator(arg=1)\ndef big():\n" + body("python", 14, "    ") + "\n"
    chunk = next(c for c in chunks_of(py, "d.py") if "big" in c.metadata["symbols"])
    assert "@decorator(arg=1)\ndef big():" in chunk.text
    assert chunk.metadata["header"] == "d.py · def big"
    rs = "use a::b;\n\n/// Docs for Big.\n#[derive(Debug)]\nfn big() {\n" + body("rust", 14, "    ") + "\n}\n"
    chunk = next(c for c in chunks_of(rs, "d.rs") if "big" in c.metadata["symbols"])
    assert "/// Docs for Big.\n#[derive(Debug)]\nfn big()" in chunk.text
    go = "package p\n\n// Big does things.\n// Really.\nfunc Big() {\n" + body("go", 8, "\t") + "\n}\n"
    chunk = next(c for c in chunks_of(go, "d.go") if "Big" in c.metadata["symbols"])
    assert "// Big does things.\n// Really.\nfunc Big()" in chunk.text


def test_small_siblings_are_merged_up_to_the_budget():
    funcs = [f"def f{i}(a, b):\n    return a + b * {i}\n" for i in range(60)]
    text = "\n\n".join(funcs)
    chunks = chunks_of(text, "many.py")
    assert 3 <= len(chunks) < 20
    assert all(len(c.metadata["symbols"]) >= 2 for c in chunks)
    assert all_symbols(chunks) == [f"f{i}" for i in range(60)]
    # a merged chunk is named by its scope only, and it is full enough
    assert all(c.metadata["header"] == "many.py" for c in chunks)
    sizes = count_tokens_batch([embed_text(c) for c in chunks])
    assert min(sizes[:-1]) > 0.6 * MAX_TOKENS
    # no function is cut between chunks
    for c in chunks:
        assert c.text.startswith("def ") and c.text.rstrip().split("\n")[-1].startswith("    return")


def test_a_2000_line_function_becomes_overlapping_windows():
    text = "import os\n\n\ndef huge(x):\n" + body("python", 2000, "    ") + "\n    return x\n\n\ndef after():\n    pass\n"
    chunks = chunks_of(text, "huge.py")
    windows = [c for c in chunks if c.metadata["header"] == "huge.py · def huge"]
    assert len(windows) > 100
    assert all(c.metadata["symbols"][0] == "huge" for c in windows)
    overlapping = sum(1 for a, b in zip(windows, windows[1:]) if b.line_start <= a.line_end)
    assert overlapping >= 0.9 * (len(windows) - 1)
    assert all(b.line_start > a.line_start for a, b in zip(windows, windows[1:]))
    assert "after" in chunks[-1].metadata["symbols"]
    sizes = count_tokens_batch([embed_text(c) for c in windows])
    assert sum(sizes) / len(sizes) > 0.75 * MAX_TOKENS


def test_windows_of_a_big_function_end_at_statements():
    stmts = []
    for i in range(150):
        stmts.append(f"    if cond_{i}(value):\n        total += {i}\n        log('step {i}')")
    text = "def f(value):\n    total = 0\n" + "\n".join(stmts) + "\n    return total\n"
    chunks = chunks_of(text, "s.py")
    assert len(chunks) > 5
    for c in chunks[:-1]:
        assert c.text.split("\n")[-1].strip().startswith("log("), c.text[-80:]


def test_nested_definitions_inside_a_big_non_definition_are_found():
    # an IIFE wrapping many functions, as bundlers write it
    funcs = "\n".join(f"  function part{i}(a) {{\n{body('javascript', 12, '    ')}\n  }}" for i in range(20))
    text = f"(function () {{\n  'use strict';\n{funcs}\n}})();\n"
    chunks = chunks_of(text, "bundle.js")
    assert all_symbols(chunks) == [f"part{i}" for i in range(20)]
    assert any(c.metadata["header"] == "bundle.js · function part3" for c in chunks)


def test_syntax_errors_fall_back_without_exception():
    broken = {
        "a.py": "def f(:\n    return (\n\nclass X\n    pass\n" * 40,
        "a.js": "function ( {{{ var = ;\n" * 80,
        "a.go": "package\nfunc {\n" * 80,
        "a.rs": "fn main( { let = ; }\n" * 80,
        "a.ts": "interface { : }\n" * 80,
    }
    for path, text in broken.items():
        chunks = chunks_of(text, path)
        assert chunks and all(c.metadata["chunker"] == "fallback" for c in chunks), path
        assert all(c.metadata["fallback_reason"] == "syntax_error" for c in chunks)
        assert all(c.metadata["symbols"] == [] for c in chunks)


def test_unsupported_languages_use_the_paragraph_fallback():
    paras = [f"int f{i}(int a) {{\n" + "\n".join(f"  a += {j};" for j in range(12)) + "\n  return a;\n}" for i in range(40)]
    text = "\n\n".join(paras) + "\n"
    chunks = chunks_of(text, "x.c")
    assert all(c.metadata["chunker"] == "fallback" and c.metadata["language"] == "c" for c in chunks)
    assert all(c.metadata["fallback_reason"] == "no_grammar" for c in chunks)
    # paragraphs stay whole when they fit
    for c in chunks:
        assert c.text.startswith("int f") and c.text.endswith("}")


def _minified_js(size: int, seed: int = 7) -> str:
    rnd = random.Random(seed)
    parts = ['"use strict";']
    n = i = 0
    while n < size:
        a, b = f"a{i}", f"b{i % 97}"
        kind = i % 4
        if kind == 0:
            s = (
                f"function {a}({b},c){{if(!{b})return c*{rnd.randint(0, 999)};for(var d=0;d<{b}.length;d++)"
                f"c+={b}[d]|0x{rnd.randint(0, 65535):x};return c}}"
            )
        elif kind == 1:
            label = "".join(rnd.choice("abcdefghijklmnop ") for _ in range(20))
            s = f'var {a}={{k{i}:"{label}",f:({b})=>{b}&&{b}.x,n:{rnd.random():.5f}}};'
        elif kind == 2:
            s = f"class C{i} extends Object{{constructor(x){{super();this.x=x}}m{i}(y){{return this.x+y}}}}"
        else:
            s = f"const {a}=({b},e)=>{{let t=parseInt(e,10);return t!==t?{b}:[{b},t].map(q=>q*2)}};"
        parts.append(s)
        n += len(s)
        i += 1
    return "".join(parts)


def test_minified_300kb_single_line_js():
    text = _minified_js(300_000)
    assert "\n" not in text
    chunks = chunks_of(text, "dist/app.min.js")
    assert chunks[0].metadata["chunker"] == "tree-sitter"
    assert all(c.line_start == 1 and c.line_end == 1 for c in chunks)
    sizes = count_tokens_batch([embed_text(c) for c in chunks])
    assert sum(sizes) / len(sizes) > 0.75 * MAX_TOKENS
    # symbols are located by character, not by line: each chunk names only what starts in it
    assert all(len(c.metadata["symbols"]) < 40 for c in chunks)
    assert "a0" in chunks[0].metadata["symbols"]


def test_non_ascii_source_locates_symbols_by_character():
    text = "# ünïcödé 😀 comment\nNAME = '東京'\n\n\ndef größe():\n" + body("python", 30, "    ") + "\n\n\ndef b():\n" + body("python", 30, "    ") + "\n"
    chunks = chunks_of(text, "u.py")
    first_b = next(c for c in chunks if "b" in c.metadata["symbols"])
    assert "def b():" in first_b.text
    assert any("größe" in c.metadata["symbols"] for c in chunks)


def test_declared_language_wins_over_a_missing_extension():
    text = (FIXTURES / "sample.go").read_text(encoding="utf-8")
    chunks = chunks_of(text, "scripts/serve", language="go")
    assert chunks[0].metadata["chunker"] == "tree-sitter" and "Server.Start" in chunks[0].metadata["symbols"]


# --- real files ---------------------------------------------------------------------------------


def _check_files(paths: list[Path], expect_tree: bool = True) -> int:
    checked = 0
    for p in paths:
        text = p.read_text(encoding="utf-8", errors="replace")
        chunks = chunk_document(doc_for(text, p.name))
        problems = chunk_problems(text, chunks)
        assert problems == [], (str(p), problems[:3])
        if expect_tree and text.strip():
            assert chunks[0].metadata["chunker"] in ("tree-sitter", "fallback")
        checked += 1
    return checked


def test_this_repository_python_files():
    paths = sorted((REPO_ROOT / "chinvex").rglob("*.py")) + sorted((REPO_ROOT / "chinvex_adapters").rglob("*.py"))
    assert _check_files(paths) > 10
    # our own code parses: the tree-sitter path is the one exercised
    text = (REPO_ROOT / "chinvex" / "chunking" / "code.py").read_text(encoding="utf-8")
    chunks = chunk_document(doc_for(text, "chinvex/chunking/code.py"))
    assert chunks[0].metadata["chunker"] == "tree-sitter"
    assert any(c.metadata["header"].endswith("class _Code · def chunk_scope") for c in chunks)


def test_site_packages_python_files():
    import markdown_it
    import pydantic

    roots = [Path(markdown_it.__file__).parent, Path(pydantic.__file__).parent]
    paths = [p for r in roots for p in sorted(r.rglob("*.py"))][:120]
    stdlib = Path(sys.modules["os"].__file__).parent
    paths += [stdlib / n for n in ("typing.py", "argparse.py", "inspect.py", "dataclasses.py")]
    assert _check_files(paths) >= 50


def test_shared_typescript_fixtures():
    ts_dir = SAMPLES / "codex-app-server" / "schema-0.169.0" / "ts"
    paths = sorted(ts_dir.rglob("*.ts"))
    assert _check_files(paths) > 5


def _system_files(root: str, pattern: str, limit: int) -> list[Path]:
    try:
        return sorted(Path(root).glob(pattern))[:limit]
    except OSError:
        return []


def test_system_javascript_go_and_rust_files_when_present():
    """Whatever real JS/Go/Rust sources this machine has (npm's own code, git's contrib Go,
    the Rust docs); CI without them skips."""
    candidates = _system_files("/usr/lib/node_modules/npm", "**/*.js", 150)
    candidates += _system_files("/usr/share/doc/git/contrib", "**/*.go", 50)
    candidates += _system_files(str(Path.home() / ".rustup" / "toolchains"), "*/share/doc/rust/html/**/*.rs", 20)
    if not candidates:
        pytest.skip("no system JS/Go/Rust sources on this machine")
    assert _check_files(candidates) == len(candidates)


@pytest.mark.parametrize("name", sorted(EXPECTED_SYMBOLS))
def test_fixture_repeated_many_times_splits_cleanly(name):
    """A fixture concatenated 40 times (still valid for most languages) makes a long file."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    if name.endswith(".go"):
        head, rest = text.split("\n", 1)
        text = head + "\n" + rest * 40
    else:
        text = text * 40
    chunks = chunks_of(text, name)
    assert len(chunks) > 5
