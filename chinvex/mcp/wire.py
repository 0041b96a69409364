"""One line off the MCP stdio wire: a JSON-RPC message, or the error to answer it with.

The SDK's stdio transport hands a line it cannot validate to the session as an exception, and
the session only logs it: the client that sent it waits for a reply forever (a truncated line,
a lone `\\ud800` escape, 200 levels of nesting, a 5,000-digit number all did that). Here every
line that is not a message this server accepts becomes a `WireError`: JSON-RPC's parse error
(-32700) when the line is not JSON text, invalid request (-32600) when it is JSON but not an
acceptable message, with the request's id whenever it can be read from the line.

Pure functions, no I/O: `chinvex.mcp.transport` does the reading and writing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import mcp_types as types
import orjson
from pydantic import ValidationError

from chinvex import fmt
from chinvex.mcp.limits import DEPTH_MAX, INT_MAX_DIGITS, INVALID_REQUEST, LINE_MAX_BYTES, PARSE_ERROR

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
ID_MAX_CHARS = 256
"""A recovered string id longer than this is not echoed back (it is not an id a client made)."""
ID_SCAN_CHARS = 1024 * 1024
"""How much of a broken line is searched for its id: clients write `id` before `params`."""

_SURROGATE = re.compile("[\ud800-\udfff]")
# A JSON string (with its escapes) or one structural character: enough to follow the nesting of
# a line that does not parse, without mistaking a brace inside a string for structure.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]]', re.S)
# The value of an `"id"` key: an integer followed by the end of its member (a number cut short
# by the end of a truncated line is not the id the client sent), or a whole string.
_ID_VALUE = re.compile(r'\s*:\s*(?:(-?\d{1,%d})(?=\s*[,}])|("[^"\\]*(?:\\.[^"\\]*)*"))' % INT_MAX_DIGITS, re.S)
# On the bytes of a line whose strings were emptied: an integer literal of 19 digits or more
# (not the fraction or exponent of a float: those follow `.`, `e`, `+` or `-`).
_STRING_BYTES = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_LONG_INT = re.compile(rb"(?<![\w.+-])-?(\d{%d,})(?![\w.])" % INT_MAX_DIGITS)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * INT_MAX_DIGITS
_NESTING = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


@dataclass(frozen=True)
class WireError:
    """The reply owed to a line that is not an acceptable message."""

    code: int
    message: str
    request_id: int | str | None = None

    def reply(self) -> types.JSONRPCError:
        return types.JSONRPCError(jsonrpc="2.0", id=self.request_id,
                                  error=types.ErrorData(code=self.code, message=self.message))


def decode_line(line: bytes) -> types.JSONRPCMessage | WireError | None:
    """The message `line` holds, the error to answer it with, or None for a blank line (newline-
    delimited JSON tolerates those; nothing was asked).

    orjson decodes (it refuses invalid UTF-8, lone surrogate escapes, NaN and Infinity, and
    nesting past 1,024 levels); nesting and integer size are measured on the bytes, with the
    strings emptied, so no Python code runs per value of a large message."""
    line = line.strip(b" \t\r\n")
    if not line:
        return None
    if len(line) > LINE_MAX_BYTES:
        return oversized_line(len(line), line[:ID_SCAN_CHARS])
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return _undecodable(line, exc)
    request_id = _top_level_id(value)
    problem = _structure_problem(_STRING_BYTES.sub(b'""', line))
    if problem is not None:
        return WireError(INVALID_REQUEST, problem, request_id)
    if isinstance(value, list):
        return WireError(INVALID_REQUEST, "Invalid request: JSON-RPC batches (arrays) are not supported; "
                         "send one message per line.")
    if not isinstance(value, dict):
        return WireError(INVALID_REQUEST, f"Invalid request: a message must be a JSON object, not {_kind(value)}.")
    envelope = _envelope_problem(value)
    if envelope is not None:
        return WireError(INVALID_REQUEST, f"Invalid request: {envelope}.", request_id)
    try:
        return types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError:
        return WireError(INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 request, notification or "
                         "response (see https://www.jsonrpc.org/specification).", request_id)


def _undecodable(line: bytes, exc: orjson.JSONDecodeError) -> WireError:
    """The reply to a line orjson refused: what is wrong, said as exactly as the line allows."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as bad:
        byte = line[bad.start:bad.start + 1].hex()
        return WireError(PARSE_ERROR, f"Parse error: the line is not UTF-8 (byte 0x{byte} at offset {bad.start}).",
                         recover_id(line.decode("utf-8", "replace")))
    request_id = recover_id(text)
    problem = _structure_problem(_STRING_BYTES.sub(b'""', line))
    if problem is not None:  # too deep, or an integer no decoder should be asked to convert
        return WireError(INVALID_REQUEST, problem, request_id)
    if "surrogate" in exc.msg:
        found = re.search(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}", text[max(exc.pos - 12, 0):exc.pos + 12])
        escape = found.group().lower() if found else "a surrogate escape"
        return WireError(PARSE_ERROR, f"Parse error: a string holds a lone UTF-16 surrogate ({escape}) at "
                         f"column {exc.colno}; JSON text must be valid Unicode.", request_id)
    if "infinity" in exc.msg:
        return WireError(INVALID_REQUEST, f"Invalid request: a number at column {exc.colno} is out of range "
                         "(JSON numbers must be finite).", request_id)
    return WireError(PARSE_ERROR, f"Parse error: {exc.msg} at column {exc.colno}.", request_id)


def _structure_problem(structure: bytes) -> str | None:
    """Nesting deeper than DEPTH_MAX or an integer beyond 64 bits, in `structure` (a line whose
    strings are emptied), said for the client; None when there is neither."""
    brackets = structure.translate(None, _NOT_BRACKETS)
    if brackets and max(accumulate(map(_NESTING.__getitem__, brackets))) > DEPTH_MAX:
        return f"Invalid request: nested deeper than {DEPTH_MAX} levels of objects and arrays."
    if _LONG_RUN not in structure.translate(_DIGITS_AS_ZERO):  # a substring search, not a regex scan
        return None
    for match in _LONG_INT.finditer(structure):
        digits = match.group(1)
        if len(digits) > INT_MAX_DIGITS or not INT_MIN <= int(match.group()) <= INT_MAX:
            return (f"Invalid request: an integer of {len(digits):,} digits; integers must fit in 64 bits "
                    f"({INT_MIN} to {INT_MAX}).")
    return None


def oversized_line(size: int, head: bytes, limit: int = LINE_MAX_BYTES) -> WireError:
    """The reply to a line of `size` bytes, longer than `limit`, of which only `head` was kept."""
    return WireError(INVALID_REQUEST, f"Invalid request: the line is {size:,} bytes ({fmt.size(size)}); the "
                     f"limit is {fmt.size(limit)}.", recover_id(head.decode("utf-8", "replace")))


def recover_id(text: str) -> int | str | None:
    """The top-level `"id"` of a JSON object that could not be decoded, when it can be read: the
    line is followed token by token (strings whole, so braces inside them do not count) and the
    first `"id":` key at depth 1 gives the value. None when the line is not an object, the id is
    not an integer or string, or it is cut off."""
    text = text[:ID_SCAN_CHARS].lstrip()
    if not text.startswith("{"):
        return None
    depth = 0
    for token in _TOKEN.finditer(text):
        kind = token.group()
        if kind in "{[":
            depth += 1
        elif kind in "}]":
            depth -= 1
            if depth <= 0:
                return None
        elif depth == 1 and kind == '"id"':
            value = _ID_VALUE.match(text, token.end())
            if value is not None:
                return _id_from(value)
    return None


def _id_from(match: re.Match[str]) -> int | str | None:
    number, string = match.groups()
    if number is not None:
        value = int(number)
        return value if INT_MIN <= value <= INT_MAX else None
    try:
        decoded = json.loads(string)
    except ValueError:
        return None
    if len(decoded) > ID_MAX_CHARS or _SURROGATE.search(decoded):
        return None
    return decoded


def _top_level_id(value: Any) -> int | str | None:
    if not isinstance(value, dict):
        return None
    rid = value.get("id")
    if isinstance(rid, bool):
        return None
    if isinstance(rid, int) and INT_MIN <= rid <= INT_MAX:
        return rid
    if isinstance(rid, str) and len(rid) <= ID_MAX_CHARS and not _SURROGATE.search(rid):
        return rid
    return None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string"}.get(type(value), "a value")


def _envelope_problem(message: dict[str, Any]) -> str | None:
    """What is wrong with the JSON-RPC envelope, in words a client's author can act on."""
    if message.get("jsonrpc") != "2.0":
        return '"jsonrpc" must be "2.0"'
    if "id" in message and (isinstance(message["id"], bool) or not isinstance(message["id"], int | str)):
        return '"id" must be a string or an integer'
    if "method" in message:
        if not isinstance(message["method"], str):
            return '"method" must be a string'
        if message.get("params") is not None and not isinstance(message["params"], dict):
            return '"params" must be an object'
        return None
    if "result" not in message and "error" not in message:
        return 'a message needs "method" (a request or notification) or "result"/"error" (a response)'
    return None
