"""The built-in embedder's WordPiece tokenizer (all-MiniLM-L6-v2), vendored in this package.

Chunk sizes are measured with it, not with len/4: code and non-English text tokenize to far more
pieces per character than prose, and a chunk longer than the model's window would be silently
truncated when embedded.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import resources

from chinvex.errors import EmbedderError
from chinvex.files.text import replace_surrogates

MODEL_MAX_TOKENS = 256
"""The window the built-in embedder is run with (sentence-transformers' max_seq_length)."""

SPECIAL_TOKENS = 2  # [CLS] and [SEP]
MAX_CONTENT_TOKENS = MODEL_MAX_TOKENS - SPECIAL_TOKENS

TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
"""sha256 of the vendored tokenizer.json. Chunk sizes and every vector depend on this exact
vocabulary, so a damaged or replaced file is refused instead of silently changing them."""


@lru_cache(maxsize=1)
def _tokenizer_json() -> str:
    return verified_tokenizer((resources.files("chinvex.embedding") / "tokenizer.json").read_bytes())


def verified_tokenizer(data: bytes) -> str:
    """The tokenizer file's text, if it is the vendored one."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != TOKENIZER_SHA256:
        raise EmbedderError(f"chinvex/embedding/tokenizer.json is not the vendored file (sha256 {digest[:12]}…, "
                            f"expected {TOKENIZER_SHA256[:12]}…): reinstall chinvex.")
    return data.decode("utf-8")


@lru_cache(maxsize=1)
def _counting_tokenizer():
    """A copy without truncation or padding, for measuring."""
    from chinvex.embedding.heavy_imports import load

    load("tokenizers")
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(_tokenizer_json())
    tok.no_truncation()
    tok.no_padding()
    return tok


def load_tokenizer(max_tokens: int = MODEL_MAX_TOKENS):
    """A fresh tokenizer configured the way the embedder runs it: truncation at `max_tokens`,
    padding to the longest sequence of a batch."""
    from chinvex.embedding.heavy_imports import load

    load("tokenizers")
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(_tokenizer_json())
    tok.enable_truncation(max_length=max_tokens)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


# The Rust tokenizer refuses strings holding lone surrogates (a TypeError, as they cannot be
# UTF-8). Text from the engine is sanitised before it gets here, but a query typed with
# undecodable bytes or a third-party caller must not crash: on that error the text is retried
# with each surrogate replaced by U+FFFD (length kept, so offsets still index the original).


def count_tokens(text: str) -> int:
    """WordPiece tokens of `text`, excluding [CLS]/[SEP]."""
    try:
        return len(_counting_tokenizer().encode(text, add_special_tokens=False).ids)
    except TypeError:
        return len(_counting_tokenizer().encode(replace_surrogates(text), add_special_tokens=False).ids)


def count_tokens_batch(texts: list[str], *, parallel: bool = False) -> list[int]:
    """Token counts of many texts.

    `parallel` runs them through `encode_batch_fast`, which hands the texts to the tokenizers
    library's thread pool: faster for the few dozen result chunks an MCP server answering a call
    counts on an otherwise idle machine. Everything else counts on the calling
    thread: ingest counts a few new words or lines of every file while the embedder keeps both
    cores busy, and each hand-off to the pool then waited for a pool thread to be scheduled
    (ARCHITECTURE, "Embedders", has the measurement)."""
    tok = _counting_tokenizer()
    if parallel:
        encode = getattr(tok, "encode_batch_fast", tok.encode_batch)
        try:
            encodings = encode(texts, add_special_tokens=False)
        except TypeError:
            encodings = encode([replace_surrogates(t) for t in texts], add_special_tokens=False)
        return [len(e.ids) for e in encodings]
    return [count_tokens(text) for text in texts]


def token_offsets(text: str) -> list[tuple[int, int]]:
    """Character span of every token of `text` (for cutting at token boundaries)."""
    try:
        encoding = _counting_tokenizer().encode(text, add_special_tokens=False)
    except TypeError:
        encoding = _counting_tokenizer().encode(replace_surrogates(text), add_special_tokens=False)
    return list(encoding.offsets)
