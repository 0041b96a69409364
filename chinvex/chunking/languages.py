"""The tree-sitter grammars chinvex parses code with, and how each names its definitions.

Every grammar differs in which nodes define something (a function, a class, an impl block) and
where the name and body sit; this module reduces that to one `DefInfo` per definition so that
the code chunker can stay language-neutral.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from tree_sitter import Language, Node, Query

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
}

ANONYMOUS = "(anonymous)"

ALIASES: dict[str, str] = {
    "py": "python",
    "python3": "python",
    "js": "javascript",
    "jsx": "javascript",
    "node": "javascript",
    "ts": "typescript",
    "golang": "go",
    "rs": "rust",
}


@dataclass(frozen=True, slots=True)
class DefInfo:
    node: Node  # the defining node (inside any decorator/export wrapper)
    kind: str  # keyword shown in headers: def, class, function, method, fn, impl, ...
    name: str
    body: Node | None
    symbol: bool = True  # listed in a chunk's symbols (impl blocks only scope their members)
    scope_name: str | None = None  # what members are qualified with, when not `name`
    absolute: str | None = None  # a qualified name that ignores enclosing scopes (Go methods)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}" if self.kind else self.name


@dataclass(frozen=True)
class LangSpec:
    name: str
    loader: Callable[[], object]
    def_types: tuple[str, ...]  # node types that may define a symbol (query targets)
    attach_types: frozenset[str]  # comments/attributes that belong to the definition below
    separator: str
    describe: Callable[[Node], DefInfo | None]

    @property
    def language(self) -> Language:
        return _language(self.name)

    @property
    def query(self) -> Query:
        return _query(self.name)


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def _name(node: Node, field: str = "name") -> str:
    return _text(node.child_by_field_name(field)) or ANONYMOUS


_TYPE_BASE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _type_base(text: str) -> str:
    """`*pkg.Server[T]` → `Server`; `&'a mut fmt::Formatter<T>` → `Formatter`."""
    head = re.split(r"[<\[(]", text, maxsplit=1)[0]
    names = _TYPE_BASE.findall(head.replace("::", "."))
    names = [n for n in names if n not in {"mut", "dyn", "const"}]
    return names[-1] if names else text.strip()


# ---------------------------------------------------------------------------------------------
# Python


def _describe_python(node: Node) -> DefInfo | None:
    t = node.type
    if t == "decorated_definition":
        inner = node.child_by_field_name("definition")
        return _describe_python(inner) if inner is not None else None
    if t == "function_definition":
        is_async = any(c.type == "async" for c in node.children[:2])
        kind = "async def" if is_async else "def"
        return DefInfo(node, kind, _name(node), node.child_by_field_name("body"))
    if t == "class_definition":
        return DefInfo(node, "class", _name(node), node.child_by_field_name("body"))
    return None


# ---------------------------------------------------------------------------------------------
# JavaScript / TypeScript

_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)

_JS_SIMPLE = {
    "function_declaration": "function",
    "generator_function_declaration": "function*",
    "function_signature": "function",
    "class_declaration": "class",
    "abstract_class_declaration": "abstract class",
    "class": "class",
    "method_definition": "method",
    "method_signature": "method",
    "abstract_method_signature": "method",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
    "internal_module": "namespace",
    "module": "module",
}


def _describe_js(node: Node) -> DefInfo | None:
    t = node.type
    if t == "export_statement":
        inner = node.child_by_field_name("declaration") or node.child_by_field_name("value")
        if inner is None:
            for c in node.named_children:
                info = _describe_js(c)
                if info is not None:
                    return info
            return None
        return _describe_js(inner)
    if t in ("ambient_declaration", "expression_statement"):
        named = [c for c in node.named_children if c.type != "comment"]
        if len(named) == 1 and (t == "ambient_declaration" or named[0].type == "internal_module"):
            return _describe_js(named[0])
        return None
    if t in _JS_SIMPLE:
        name = _text(node.child_by_field_name("name"))
        if t == "module":
            name = name.strip("'\"`")
        if not name:
            parent = node.parent
            exported = t == "class" and parent is not None and parent.type == "export_statement"
            name = "default" if exported else ANONYMOUS
        return DefInfo(node, _JS_SIMPLE[t], name, node.child_by_field_name("body"))
    if t in ("field_definition", "public_field_definition"):
        value = node.child_by_field_name("value")
        if value is None or value.type not in _FUNCTION_VALUES:
            return None
        key = node.child_by_field_name("property") or node.child_by_field_name("name")
        return DefInfo(node, "method", _text(key) or ANONYMOUS, value.child_by_field_name("body"))
    if t in ("lexical_declaration", "variable_declaration"):
        for c in node.named_children:
            if c.type == "variable_declarator":
                info = _describe_js(c)
                if info is not None:
                    return info
        return None
    if t == "variable_declarator":
        value = node.child_by_field_name("value")
        if value is None:
            return None
        if value.type in _FUNCTION_VALUES:
            return DefInfo(node, "function", _name(node), value.child_by_field_name("body"))
        if value.type == "class":
            return DefInfo(node, "class", _name(node), value.child_by_field_name("body"))
        return None
    return None


# ---------------------------------------------------------------------------------------------
# Go


def _describe_go(node: Node) -> DefInfo | None:
    t = node.type
    if t == "function_declaration":
        return DefInfo(node, "func", _name(node), node.child_by_field_name("body"))
    if t == "method_declaration":
        recv = node.child_by_field_name("receiver")
        recv_type = ""
        if recv is not None:
            for p in recv.named_children:
                if p.type == "parameter_declaration":
                    recv_type = _text(p.child_by_field_name("type"))
                    break
        name = _name(node)
        base = _type_base(recv_type) if recv_type else ""
        kind = f"func ({recv_type})" if recv_type else "func"
        absolute = f"{base}.{name}" if base else None
        return DefInfo(node, kind, name, node.child_by_field_name("body"), absolute=absolute)
    if t == "type_spec":
        return DefInfo(node, "type", _name(node), node.child_by_field_name("type"))
    if t == "type_declaration":
        specs = [c for c in node.named_children if c.type == "type_spec"]
        if len(specs) == 1:
            return _describe_go(specs[0])
        return None
    return None


# ---------------------------------------------------------------------------------------------
# Rust

_RUST_SIMPLE = {
    "function_item": "fn",
    "function_signature_item": "fn",
    "struct_item": "struct",
    "enum_item": "enum",
    "union_item": "union",
    "trait_item": "trait",
    "mod_item": "mod",
    "type_item": "type",
    "const_item": "const",
    "static_item": "static",
    "macro_definition": "macro_rules!",
}


def _describe_rust(node: Node) -> DefInfo | None:
    t = node.type
    if t in _RUST_SIMPLE:
        return DefInfo(node, _RUST_SIMPLE[t], _name(node), node.child_by_field_name("body"))
    if t == "impl_item":
        type_text = _text(node.child_by_field_name("type"))
        trait_text = _text(node.child_by_field_name("trait"))
        name = f"{trait_text} for {type_text}" if trait_text else type_text
        return DefInfo(
            node,
            "impl",
            name or ANONYMOUS,
            node.child_by_field_name("body"),
            symbol=False,
            scope_name=_type_base(type_text) if type_text else None,
        )
    return None


# ---------------------------------------------------------------------------------------------

_JS_TYPES = (
    "function_declaration",
    "generator_function_declaration",
    "class_declaration",
    "class",
    "method_definition",
    "field_definition",
    "variable_declarator",
)
_TS_TYPES = (
    "function_declaration",
    "generator_function_declaration",
    "function_signature",
    "class_declaration",
    "abstract_class_declaration",
    "class",
    "method_definition",
    "method_signature",
    "abstract_method_signature",
    "public_field_definition",
    "variable_declarator",
    "interface_declaration",
    "type_alias_declaration",
    "enum_declaration",
    "internal_module",
    "module",
)


def _load(name: str):
    if name == "python":
        import tree_sitter_python as m

        return m.language()
    if name == "javascript":
        import tree_sitter_javascript as m

        return m.language()
    if name == "typescript":
        import tree_sitter_typescript as m

        return m.language_typescript()
    if name == "tsx":
        import tree_sitter_typescript as m

        return m.language_tsx()
    if name == "go":
        import tree_sitter_go as m

        return m.language()
    if name == "rust":
        import tree_sitter_rust as m

        return m.language()
    raise KeyError(name)


SPECS: dict[str, LangSpec] = {
    "python": LangSpec(
        "python",
        lambda: _load("python"),
        ("function_definition", "class_definition"),
        frozenset({"comment"}),
        ".",
        _describe_python,
    ),
    "javascript": LangSpec(
        "javascript", lambda: _load("javascript"), _JS_TYPES, frozenset({"comment"}), ".", _describe_js
    ),
    "typescript": LangSpec(
        "typescript", lambda: _load("typescript"), _TS_TYPES, frozenset({"comment"}), ".", _describe_js
    ),
    "tsx": LangSpec("tsx", lambda: _load("tsx"), _TS_TYPES, frozenset({"comment"}), ".", _describe_js),
    "go": LangSpec(
        "go",
        lambda: _load("go"),
        ("function_declaration", "method_declaration", "type_spec"),
        frozenset({"comment"}),
        ".",
        _describe_go,
    ),
    "rust": LangSpec(
        "rust",
        lambda: _load("rust"),
        tuple(_RUST_SIMPLE) + ("impl_item",),
        frozenset({"line_comment", "block_comment", "attribute_item"}),
        "::",
        _describe_rust,
    ),
}


@lru_cache(maxsize=None)
def _language(name: str) -> Language:
    return Language(SPECS[name].loader())


@lru_cache(maxsize=None)
def _query(name: str) -> Query:
    spec = SPECS[name]
    pattern = "[" + " ".join(f"({t})" for t in spec.def_types) + "] @def"
    return Query(_language(name), pattern)


def language_for(language: str | None, path: str | None) -> str | None:
    """The tree-sitter language for a document, from its declared language or its extension."""
    if language:
        key = language.strip().lower()
        key = ALIASES.get(key, key)
        if key in SPECS:
            if key == "typescript" and path and path.lower().endswith(".tsx"):
                return "tsx"
            return key
    if path:
        lower = path.lower()
        dot = lower.rfind(".")
        if dot >= 0 and "/" not in lower[dot:]:
            return EXTENSIONS.get(lower[dot:])
    return None
