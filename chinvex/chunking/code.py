"""Code chunks along the syntax tree: definitions as units, small siblings merged, big ones split.

The file is tiled into line ranges, one per top-level node (comments and attributes directly
above a definition travel with it), so no line is ever left out. Ranges that fit the budget are
merged greedily with their neighbours; a range that does not is split: a class, impl, module or
any node holding definitions is tiled again by its members under a longer header; anything else
(a huge function, a big literal) becomes line windows with overlap that prefer to end where a
statement ends.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from tree_sitter import Node, Parser, QueryCursor

from .base import (
    Draft,
    LineIndex,
    Piece,
    choose_windows,
    TAIL_JOIN_RATIO,
    build_header,
    text_budget,
    window_drafts,
)
from .languages import ANONYMOUS, SPECS, DefInfo, LangSpec

_MAX_DEPTH = 40
"""Nesting beyond this is windowed rather than recursed into (pathological inputs)."""


def _rows(node: Node) -> tuple[int, int]:
    """First and last line of a node; a node ending at column 0 ends on the line before."""
    sr = node.start_point.row
    er = node.end_point.row
    if er > sr and node.end_point.column == 0:
        er -= 1
    return sr, er


def _key(node: Node) -> tuple[int, int, str]:
    return node.start_byte, node.end_byte, node.type


@dataclass
class _Unit:
    a: int  # lines [a, b)
    b: int
    nodes: list[Node] = field(default_factory=list)
    info: DefInfo | None = None
    main: Node | None = None  # the one significant node of the unit, when there is one


class _Code:
    def __init__(self, idx: LineIndex, spec: LangSpec, path: str, root: Node) -> None:
        self.idx = idx
        self.spec = spec
        self.path = path
        self.quals: dict[tuple[int, int, str], str] = {}
        self.prefixes: dict[tuple[int, int, str], str | None] = {}
        self.symbol_pos: list[int] = []
        self.symbol_names: list[str] = []
        self._collect_defs(root)

    # -- symbols -------------------------------------------------------------------------------

    def _collect_defs(self, root: Node) -> None:
        """Qualified names of all definitions, nesting found from byte ranges (no parent walks)."""
        spec = self.spec
        captured = QueryCursor(spec.query).captures(root).get("def", [])
        infos = [i for i in (spec.describe(n) for n in captured) if i is not None]
        infos.sort(key=lambda d: (d.node.start_byte, -d.node.end_byte))
        stack: list[tuple[int, str | None]] = []  # (end_byte, prefix for members)
        found: list[tuple[int, str]] = []
        seen: set[tuple[int, int, str]] = set()
        for d in infos:
            k = _key(d.node)
            if k in seen:
                continue
            seen.add(k)
            while stack and stack[-1][0] <= d.node.start_byte:
                stack.pop()
            parent = stack[-1][1] if stack else None
            anonymous = d.name == ANONYMOUS
            if d.absolute:
                qual = d.absolute
            elif anonymous:
                qual = parent or ANONYMOUS
            else:
                qual = f"{parent}{spec.separator}{d.name}" if parent else d.name
            if anonymous:
                prefix = parent
            elif d.scope_name:
                prefix = f"{parent}{spec.separator}{d.scope_name}" if parent else d.scope_name
            else:
                prefix = qual
            stack.append((d.node.end_byte, prefix))
            self.quals[k] = qual
            if d.symbol and not anonymous:
                found.append((self._char_of(d.node), qual))
        found.sort()
        self.symbol_pos = [r for r, _ in found]
        self.symbol_names = [q for _, q in found]

    def _char_of(self, node: Node) -> int:
        """Char offset of a node's start (tree-sitter counts bytes)."""
        row, col = node.start_point.row, node.start_point.column
        line = self.idx.lines[row] if row < self.idx.n else ""
        if not line.isascii():
            col = len(line.encode("utf-8", "surrogatepass")[:col].decode("utf-8", "ignore"))
        return self.idx.starts[row] + col if row < self.idx.n else len(self.idx.text)

    def _symbols(self, scope: tuple[DefInfo, ...], start: int, end: int) -> list[str]:
        """The innermost enclosing definition, then those starting inside [start, end)."""
        names: list[str] = []
        if scope and scope[-1].symbol and scope[-1].name != ANONYMOUS:
            q = self.quals.get(_key(scope[-1].node))
            if q:
                names.append(q)
        lo = bisect_left(self.symbol_pos, start)
        hi = bisect_left(self.symbol_pos, end)
        seen = set(names)
        for q in self.symbol_names[lo:hi]:
            if q not in seen:
                seen.add(q)
                names.append(q)
        return names

    # -- headers -------------------------------------------------------------------------------

    def header(self, scope: tuple[DefInfo, ...]) -> str:
        return build_header(self.path, tuple(d.label for d in scope))

    def draft(self, start: int, end: int, scope: tuple[DefInfo, ...], exact: bool = True) -> Draft:
        return Draft(start, end, self.header(scope), {"_scope": scope}, exact)

    # -- tiling --------------------------------------------------------------------------------

    def units(self, children: list[Node], a: int, b: int) -> list[_Unit]:
        """Tile lines [a, b) by `children`: nodes sharing a line share a unit, comments and
        attributes directly above a definition join it, and the lines before the first child
        (a class signature) form a head unit of their own."""
        attach = self.spec.attach_types
        groups: list[_Unit] = []
        for c in children:
            sr, er = _rows(c)
            if er < a or sr >= b:
                continue
            sr, er = max(sr, a), min(er, b - 1)
            if groups and sr <= groups[-1].b:
                g = groups[-1]
                g.b = max(g.b, er)
                g.nodes.append(c)
            else:
                groups.append(_Unit(sr, er, [c]))  # b holds the last line until tiled
        for g in groups:
            significant = [n for n in g.nodes if n.is_named and n.type not in attach]
            for n in significant:
                info = self.spec.describe(n)
                if info is not None:
                    g.info = info
                    g.main = n
                    break
            if g.main is None and len(significant) == 1:
                g.main = significant[0]
        merged: list[_Unit] = []
        for g in reversed(groups):
            only_attach = all(n.is_named and n.type in attach for n in g.nodes)
            nxt = merged[-1] if merged else None
            if nxt is not None and only_attach and nxt.info is not None and nxt.a == g.b + 1:
                nxt.a = g.a
                nxt.nodes[0:0] = g.nodes
            else:
                merged.append(g)
        merged.reverse()
        if not merged:
            return [_Unit(a, b)]
        out: list[_Unit] = []
        first = merged[0]
        if first.a > a and self.idx.first_nonblank(a, first.a) is not None:
            out.append(_Unit(a, first.a))
        else:
            first.a = a
        for k, g in enumerate(merged):
            g.b = merged[k + 1].a if k + 1 < len(merged) else b
            out.append(g)
        return out

    # -- chunking ------------------------------------------------------------------------------

    def chunk_scope(self, units: list[_Unit], scope: tuple[DefInfo, ...], depth: int = 0) -> list[Draft]:
        idx = self.idx
        scope_header = self.header(scope)
        budget = text_budget(scope_header)
        out: list[Draft] = []
        run: list[_Unit] = []

        def solo(u: _Unit) -> int:
            return text_budget(self.header(scope + (u.info,))) if u.info is not None else budget

        def flush(hold: bool) -> int | None:
            """Emit the run's windows; with `hold`, keep back a small last window of non-
            definitions and return its first line (it joins the split that follows)."""
            if not run:
                return None
            pieces = [
                Piece(idx.starts[u.a], idx.end_of(u.b - 1), idx.span_tokens(u.a, u.b)) for u in run
            ]
            # a window holding exactly one definition is named after it
            defs = [0]
            for u in run:
                defs.append(defs[-1] + (u.info is not None))

            def only_def(i: int, j: int) -> _Unit | None:
                if defs[j] - defs[i] != 1:
                    return None
                return next(u for u in run[i:j] if u.info is not None)

            def limit(i: int, j: int) -> int:
                u = only_def(i, j)
                return solo(u) if u is not None else budget

            windows = choose_windows(pieces, budget, 0, limit)
            held = None
            if hold and windows:
                i, j = windows[-1]
                small = sum(p.tokens for p in pieces[i:j]) < TAIL_JOIN_RATIO * budget
                if small and defs[j] == defs[i]:
                    held = run[i].a
                    windows.pop()
            for i, j in windows:
                u = only_def(i, j)
                inner = scope + (u.info,) if u is not None and u.info is not None else scope
                out.append(self.draft(pieces[i].start, pieces[j - 1].end, inner))
            run.clear()
            return held

        for u in units:
            if idx.span_tokens(u.a, u.b) <= solo(u):
                run.append(u)
            else:
                held = flush(True)
                if held is not None:
                    u = _Unit(held, u.b, u.nodes, u.info, u.main)
                out.extend(self.split(u, scope, depth + 1))
        flush(False)
        return out

    def split(self, u: _Unit, scope: tuple[DefInfo, ...], depth: int) -> list[Draft]:
        inner = scope + (u.info,) if u.info is not None else scope
        start = None
        if u.info is not None:
            start = u.info.body if u.info.body is not None else u.info.node
        elif u.main is not None:
            start = u.main
        if start is not None and depth < _MAX_DEPTH:
            container = self._container(start)
            if container is not None:
                sub = self.units(container.children, u.a, u.b)
                if len(sub) >= 2:
                    return self.chunk_scope(sub, inner, depth)
        scores = self._statement_scores(start) if start is not None else self._group_scores(u)
        header = self.header(inner)
        drafts = window_drafts(self.idx, u.a, u.b, header, {}, overlap=True, scores=scores)
        for d in drafts:
            d.meta["_scope"] = inner
        return drafts

    def _container(self, node: Node) -> Node | None:
        """The node whose children include definitions, found by descending into whichever
        child spans most of the node (class → body, IIFE → function body, ...)."""
        describe = self.spec.describe
        attach = self.spec.attach_types
        for _ in range(12):
            kids = node.named_children
            if not kids:
                return None
            if any(k.type not in attach and describe(k) is not None for k in kids):
                return node
            sr, er = _rows(node)
            big = max(kids, key=lambda k: _rows(k)[1] - _rows(k)[0])
            bsr, ber = _rows(big)
            if (ber - bsr + 1) * 2 < (er - sr + 1):
                return None
            node = big
        return None

    def _statement_scores(self, node: Node) -> dict[int, float]:
        """Break scores at the ends of statements, best at the outermost level of the body."""
        scores: dict[int, float] = {}
        level = 3.0
        for _ in range(5):
            kids = node.named_children
            if not kids:
                break
            if len(kids) >= 2:
                for k in kids:
                    er = _rows(k)[1]
                    if scores.get(er, 0.0) < level:
                        scores[er] = level
                level -= 0.2
            node = max(kids, key=lambda k: _rows(k)[1] - _rows(k)[0])
        return scores

    def _group_scores(self, u: _Unit) -> dict[int, float]:
        return {_rows(n)[1]: 3.0 for n in u.nodes}

    def finish(self, drafts: list[Draft]) -> list[Draft]:
        for d in drafts:
            scope = d.meta.pop("_scope", ())
            d.meta["symbols"] = self._symbols(scope, d.start, d.end)
        return drafts


def code_drafts(idx: LineIndex, language: str, path: str) -> list[Draft] | None:
    """Drafts for a file in a tree-sitter language; None when it does not parse cleanly."""
    spec = SPECS[language]
    try:
        parser = Parser(spec.language)
        tree = parser.parse(idx.text.encode("utf-8", "surrogatepass"))
    except (ValueError, RuntimeError, UnicodeError):
        return None
    root = tree.root_node
    if root is None or root.has_error:
        return None
    code = _Code(idx, spec, path, root)
    drafts = code.chunk_scope(code.units(root.children, 0, idx.n), ())
    return code.finish(drafts)
