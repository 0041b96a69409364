"""The name a "which variable / flag / function …" question asks for, read off its sentence.

"Which environment variable moves the contexts folder?" asks for a name from code, and the
answer a reader wants is `CHINVEX_CONTEXTS_ROOT`, with the sentence that says so as the
citation's quote, not the sentence again. A sentence often names several things ("`A` and `B`
move either root"); the name asked for is the one whose own words the question uses
("contexts"). When that does not single one out, there is no name answer and the sentence
stays the answer: a wrong name is worse than a long answer.
"""

from __future__ import annotations

import re

from chinvex.answer.answer_types import CODE_NAME
from chinvex.answer.question import Question
from chinvex.answer.text import Stemmer

_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_CONSTANT = re.compile(r"^\$?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")
_SHAPES = {
    "environment": lambda name: bool(_CONSTANT.match(name)),
    "variable": lambda name: bool(_CONSTANT.match(name)) or "_" in name,
    "flag": lambda name: name.startswith("-"),
    "file": lambda name: "." in name or "/" in name,
    "module": lambda name: "." in name or "/" in name or "_" in name,
    "endpoint": lambda name: name.startswith("/") or "/" in name,
}
"""What a name of each asked kind looks like; kinds not listed (a function, a command, a
parameter) take any name that is not a CONSTANT (an environment variable or a constant)."""


def asked_name(question: Question, sentence: str, stemmer: Stemmer) -> str | None:
    """The one name of `sentence` a singular name question asks for, or None.

    Only names shaped like the kind asked for count (an environment variable is a CONSTANT, a
    flag starts with a dash, a command is not a CONSTANT), and names the question itself
    writes are not answers to it ("Which function does `fuse_scores` call?")."""
    if question.expects != "name" or question.many:
        return None
    asked = {_bare(m.group(0)).casefold() for m in CODE_NAME.finditer(question.text)}
    names = list(dict.fromkeys(_bare(m.group(0)) for m in CODE_NAME.finditer(sentence)))
    fits = _SHAPES.get(question.kind_noun, lambda name: not _CONSTANT.match(name))
    names = [n for n in names if n and n.casefold() not in asked and fits(n)]
    if len(names) <= 1:
        return names[0] if names else None
    wanted = stemmer.stems(" ".join(question.words))
    overlap = {name: len(wanted & stemmer.stems(" ".join(_PARTS.findall(name)))) for name in names}
    best = max(overlap.values())
    top = [name for name, count in overlap.items() if count == best]
    return top[0] if best > 0 and len(top) == 1 else None


def _bare(name: str) -> str:
    """A name without the backticks or trailing punctuation prose puts around it."""
    return name.strip("`").strip().rstrip(".,;:")
