"""Tool calls: one normalised `ToolPiece` per rollout record, merged by call id into a turn.

A single tool call shows up in a rollout as up to three records: the model's call
(`response_item/function_call`, `custom_tool_call`, ...), its output
(`function_call_output`, ...) and, depending on the version, a completion event
(`event_msg/exec_command_end`, `mcp_tool_call_end`, ... in legacy files,
`event_msg/item_completed` with `CommandExecution`, `McpToolCall`, ... in paginated ones).
They share the call id; the pieces are merged into one slot, rendered as one `role="tool"`
turn whose text holds everything searchable (command/arguments and the clipped output).
The records are read into pieces in `tool_records.py`; this module holds the piece, the
rendering of inputs and outputs, and the merging.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from chinvex.models import Attachment
from chinvex_adapters.kit.edits import FileEdit

from .content import (
    TOOL_INPUT_LIMIT,
    TOOL_INPUT_VALUE_LIMIT,
    TOOL_OUTPUT_LIMIT,
    as_dict,
    as_int,
    as_list,
    as_str,
    command_text,
    content_parts,
    exit_code_from_text,
    join_texts,
    json_scalar,
    clean_terminal_output,
    scrub,
    truncate_middle,
)

SHELL_TOOLS = {"exec_command", "shell", "shell_command", "local_shell", "container.exec",
               "run_shell_command", "bash"}


@dataclass
class ToolPiece:
    role: str  # "call" | "output" | "event"
    key: str | None
    name: str | None = None
    input: Any = None
    input_text: str | None = None
    output_text: str | None = None
    detail_text: str | None = None  # shown only when no call carries the input (patch diffs)
    exit_code: int | None = None
    status: str | None = None
    attachments: list[Attachment] = field(default_factory=list)
    child_thread_ids: list[str] = field(default_factory=list)
    edits: list[FileEdit] = field(default_factory=list)
    """Files the call edits, from its full arguments (apply_patch's envelope), paths as given."""


# -- structured input ------------------------------------------------------------------------

def small_input(value: Any, depth: int = 0) -> Any:
    """A bounded copy of a tool's arguments for `ToolCall.input` (strings clipped, no base64)."""
    if isinstance(value, str):
        text, _ = scrub(value)
        return truncate_middle(text, TOOL_INPUT_VALUE_LIMIT)[0]
    if depth >= 4:
        return None if isinstance(value, (dict, list)) else value
    if isinstance(value, dict):
        out = {}
        for i, (k, v) in enumerate(value.items()):
            if i >= 50:
                out["…"] = f"{len(value) - 50} more keys"
                break
            out[str(k)] = small_input(v, depth + 1)
        return out
    if isinstance(value, list):
        items = [small_input(v, depth + 1) for v in value[:50]]
        if len(value) > 50:
            items.append(f"… {len(value) - 50} more items")
        return items
    return json_scalar(value)  # NaN, infinities and huge ints are not portable JSON


def parse_arguments(arguments: Any) -> Any:
    """Function-call arguments are a JSON *string*; hand-made files use objects."""
    if isinstance(arguments, str):
        stripped = arguments.strip()
        if stripped[:1] in ("{", "["):
            try:
                return json.loads(stripped)
            except (ValueError, RecursionError):
                return arguments
        return arguments
    return arguments


def compact_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        return str(value)


def render_input(name: str | None, args: Any) -> str | None:
    """A readable one-glance form of the arguments: `$ cmd` for shells, plan steps, raw text."""
    if args is None:
        return None
    if isinstance(args, str):
        return args
    d = as_dict(args)
    short = (name or "").rsplit(".", 1)[-1]
    if d and (short in SHELL_TOOLS or name in SHELL_TOOLS):
        cmd = command_text(d.get("cmd", d.get("command")))
        if cmd is not None:
            where = as_str(d.get("workdir")) or as_str(d.get("cwd")) or as_str(d.get("working_directory"))
            return f"$ {cmd}" + (f"\n(in {where})" if where else "")
    if d and short == "update_plan":
        lines = []
        if as_str(d.get("explanation")):
            lines.append(d["explanation"])
        for step in as_list(d.get("plan")):
            step = as_dict(step)
            if as_str(step.get("step")):
                lines.append(f"- [{as_str(step.get('status')) or ''}] {step['step']}")
        if lines:
            return "\n".join(lines)
    if d and short in ("apply_patch",) and isinstance(d.get("input"), str):
        return d["input"]
    return compact_json(args)


# -- outputs ---------------------------------------------------------------------------------

def output_from_value(value: Any) -> tuple[str | None, int | None, list[Attachment]]:
    """Text, exit code and images of a `*_call_output.output` in any of its historic shapes."""
    if value is None:
        return None, None, []
    if isinstance(value, str):
        stripped = value.lstrip()
        if stripped.startswith("{") and '"output"' in stripped[:200]:
            # Older shell tools: {"output": "...", "metadata": {"exit_code": 0, ...}}
            try:
                parsed = json.loads(stripped)
            except (ValueError, RecursionError):
                parsed = None
            if isinstance(parsed, dict) and isinstance(parsed.get("output"), str):
                code = as_int(as_dict(parsed.get("metadata")).get("exit_code"))
                return parsed["output"], code, []
        return value, exit_code_from_text(value), []
    if isinstance(value, dict):
        if isinstance(value.get("content"), (str, list)):
            texts, atts = content_parts(value["content"])
            text = join_texts(texts)
            if value.get("success") is False and text:
                text = "[failed] " + text
            return text, exit_code_from_text(text), atts
        if value.get("type") is not None:
            texts, atts = content_parts([value])
            text = join_texts(texts)
            return text, exit_code_from_text(text), atts
        return compact_json(small_input(value)), None, []
    if isinstance(value, list):
        texts, atts = content_parts(value)
        texts, chunk_code = unwrap_code_mode_chunks(texts)
        text = join_texts(texts)
        return text, chunk_code if chunk_code is not None else exit_code_from_text(text), atts
    return str(value), None, []


def unwrap_code_mode_chunks(texts: list[str]) -> tuple[list[str], int | None]:
    """The command output inside a code-mode `exec` result, and its exit code.

    In code mode (Codex >= ~0.14x) the model writes a script for a freeform `exec` tool; a
    script that prints a nested tool's result whole (`text(await tools.exec_command(...))`)
    leaves that result as one `input_text` part holding a JSON object
    `{"chunk_id", "wall_time_seconds", "exit_code", "original_token_count", "output"}`. Kept
    as JSON, the output's newlines and quotes stay escaped (`\\n`, `\\"`) and the words run
    together for search, so such a part is replaced by its `output`; the last non-zero exit code
    (else the last one) is returned. Any other part is kept as it is.
    """
    out: list[str] = []
    codes: list[int] = []
    for text in texts:
        chunk = _code_mode_chunk(text)
        if chunk is None:
            out.append(text)
            continue
        output, code = chunk
        if output:
            out.append(output)
        if code is not None:
            codes.append(code)
    if not codes:
        return out, None
    failed = [c for c in codes if c != 0]
    return out, (failed or codes)[-1]


def _code_mode_chunk(text: str) -> tuple[str, int | None] | None:
    """(output, exit code) if `text` is exactly one code-mode chunk object, else None."""
    stripped = text.strip()
    if not (stripped.startswith('{"chunk_id"') and stripped.endswith("}")):
        return None
    try:
        parsed = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("output"), str):
        return None
    return parsed["output"].rstrip("\n"), as_int(parsed.get("exit_code"))



# -- merging and rendering -------------------------------------------------------------------

@dataclass
class ToolSlot:
    key: str | None
    name: str | None = None
    input: Any = None
    input_text: str | None = None
    output_text: str | None = None
    detail_text: str | None = None
    exit_code: int | None = None
    status: str | None = None
    roles: set[str] = field(default_factory=set)
    attachments: list[Attachment] = field(default_factory=list)
    child_thread_ids: list[str] = field(default_factory=list)
    edits: list[FileEdit] = field(default_factory=list)

    def accepts(self, piece: ToolPiece) -> bool:
        return piece.role not in self.roles

    def add(self, piece: ToolPiece) -> None:
        """Fill what is still missing; the model's call names the tool and gives the input."""
        self.roles.add(piece.role)
        if piece.name and (self.name is None or piece.role == "call"):
            self.name = piece.name
        if piece.input is not None and (self.input is None or piece.role == "call"):
            self.input = piece.input
        if piece.input_text and (self.input_text is None or piece.role == "call"):
            self.input_text = piece.input_text
        if piece.output_text and (self.output_text is None or piece.role == "output"):
            self.output_text = piece.output_text
        if piece.detail_text and self.detail_text is None:
            self.detail_text = piece.detail_text
        if piece.exit_code is not None and self.exit_code is None:
            self.exit_code = piece.exit_code
        if piece.status and self.status is None:
            self.status = piece.status
        for att in piece.attachments:
            if att not in self.attachments:
                self.attachments.append(att)
        for child in piece.child_thread_ids:
            if child not in self.child_thread_ids:
                self.child_thread_ids.append(child)
        if piece.edits and (not self.edits or piece.role == "call"):
            self.edits = list(piece.edits)


@dataclass
class RenderedTool:
    name: str
    input: Any
    text: str
    output_truncated: bool
    input_truncated: bool
    images_scrubbed: int


def render_slot(slot: ToolSlot, fallback_name: str | None = None) -> RenderedTool:
    name = slot.name or fallback_name or "tool"
    lines = [f"Tool: {name}"]
    scrubbed = 0
    input_truncated = False
    in_text = slot.input_text
    if "call" not in slot.roles and slot.detail_text:
        in_text = (in_text + "\n" if in_text else "") + slot.detail_text
    if in_text:
        in_text, n = scrub(in_text)
        scrubbed += n
        in_text, input_truncated = truncate_middle(in_text, TOOL_INPUT_LIMIT)
        lines.append(in_text)
    out_truncated = False
    if slot.output_text is not None and slot.output_text.strip():
        out, n = scrub(clean_terminal_output(slot.output_text))
        scrubbed += n
        out, out_truncated = truncate_middle(out, TOOL_OUTPUT_LIMIT)
        label = "Output" + (f" (exit code {slot.exit_code})" if slot.exit_code is not None else "")
        lines.append(f"{label}:\n{out.rstrip()}")
    elif slot.exit_code is not None:
        lines.append(f"Exit code: {slot.exit_code}")
    return RenderedTool(name, slot.input, "\n".join(lines), out_truncated, input_truncated, scrubbed)
