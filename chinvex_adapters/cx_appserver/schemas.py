"""Pydantic models of the app-server v2 responses chinvex reads (codex 0.169.0).

Written from the generated schema bundle (`fixtures/codex-app-server/schema-0.169.0/json/
codex_app_server_protocol.schemas.json`, definitions under `v2`) and checked against the
recorded wire transcripts. Rules:

- Every model accepts unknown fields (`extra="allow"`): the protocol grows every release.
- Only fields normalisation relies on are required; enums are plain strings so that a new
  status or phase value does not make a whole thread unreadable.
- `ThreadItem` is a union discriminated on `type`; a type this module does not know validates
  into `UnknownItem`, which keeps the raw dict so nothing is lost.
- Wire names are camelCase (snake_case attributes here via aliases), except `UserInput.text`'s
  `text_elements`, which really is snake_case on the wire.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator
from pydantic.alias_generators import to_camel


class _Wire(BaseModel):
    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True)


# --------------------------------------------------------------------------------------------
# UserInput (v2/UserInput)
# --------------------------------------------------------------------------------------------


class TextInput(_Wire):
    type: Literal["text"]
    text: str
    text_elements: list[dict[str, Any]] = Field(default_factory=list, alias="text_elements")


class ImageInput(_Wire):
    """`url` may be an https URL or a `data:` URL (base64 — never indexed)."""

    type: Literal["image"]
    url: str | None = None
    file_id: str | None = None
    detail: str | None = None


class LocalImageInput(_Wire):
    type: Literal["localImage"]
    path: str
    detail: str | None = None


class AudioInput(_Wire):
    type: Literal["audio"]
    url: str | None = None
    file_id: str | None = None


class LocalAudioInput(_Wire):
    type: Literal["localAudio"]
    path: str


class SkillInput(_Wire):
    type: Literal["skill"]
    name: str
    path: str | None = None


class MentionInput(_Wire):
    type: Literal["mention"]
    name: str
    path: str | None = None


class UnknownInput(_Wire):
    type: str = "unknown"
    raw: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _keep_raw(cls, data: Any) -> Any:
        if isinstance(data, dict) and "raw" not in data:
            return {"type": str(data.get("type", "unknown")), "raw": dict(data)}
        return data


_INPUT_TAGS = {"text", "image", "localImage", "audio", "localAudio", "skill", "mention"}


def _input_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in _INPUT_TAGS else "unknown"


UserInput = Annotated[
    Union[
        Annotated[TextInput, Tag("text")],
        Annotated[ImageInput, Tag("image")],
        Annotated[LocalImageInput, Tag("localImage")],
        Annotated[AudioInput, Tag("audio")],
        Annotated[LocalAudioInput, Tag("localAudio")],
        Annotated[SkillInput, Tag("skill")],
        Annotated[MentionInput, Tag("mention")],
        Annotated[UnknownInput, Tag("unknown")],
    ],
    Discriminator(_input_tag),
]


# --------------------------------------------------------------------------------------------
# ThreadItem (v2/ThreadItem); every item may carry startedAtMs/completedAtMs
# --------------------------------------------------------------------------------------------


class _Item(_Wire):
    id: str
    started_at_ms: int | None = None
    completed_at_ms: int | None = None


class UserMessageItem(_Item):
    type: Literal["userMessage"]
    client_id: str | None = None
    content: list[UserInput] = Field(default_factory=list)


class HookPromptFragment(_Wire):
    text: str = ""
    hook_run_id: str | None = None


class HookPromptItem(_Item):
    type: Literal["hookPrompt"]
    fragments: list[HookPromptFragment] = Field(default_factory=list)


class AgentMessageItem(_Item):
    type: Literal["agentMessage"]
    text: str = ""
    phase: str | None = None
    memory_citation: dict[str, Any] | None = None
    delivery: str | None = None
    moderation: dict[str, Any] | None = None
    questions: list[Any] | None = None


class FunctionCallOutputItem(_Item):
    """`output` is a string or a list of Responses content items (input_text, input_image…)."""

    type: Literal["functionCallOutput"]
    name: str = ""
    namespace: str | None = None
    output: str | list[dict[str, Any]] | None = None


class PlanItem(_Item):
    type: Literal["plan"]
    text: str = ""


class ReasoningItem(_Item):
    type: Literal["reasoning"]
    summary: list[str] = Field(default_factory=list)
    content: list[str] = Field(default_factory=list)


class CommandExecutionItem(_Item):
    type: Literal["commandExecution"]
    command: str
    cwd: str | None = None
    process_id: str | None = None
    source: str | None = None
    status: str | None = None
    command_actions: list[dict[str, Any]] = Field(default_factory=list)
    aggregated_output: str | None = None
    exit_code: int | None = None
    duration_ms: int | None = None
    plugin_id: str | None = None
    script_path: str | None = None


class FileUpdateChange(_Wire):
    path: str
    kind: dict[str, Any] | str | None = None  # {"type": "add"|"delete"|"update", "move_path"?}
    diff: str = ""


class FileChangeItem(_Item):
    type: Literal["fileChange"]
    changes: list[FileUpdateChange] = Field(default_factory=list)
    status: str | None = None


class McpToolCallItem(_Item):
    type: Literal["mcpToolCall"]
    server: str
    tool: str
    status: str | None = None
    arguments: Any = None
    result: dict[str, Any] | None = None  # {"content": [...], "structuredContent"?, "_meta"?}
    error: dict[str, Any] | None = None  # {"message"}
    duration_ms: int | None = None


class DynamicToolCallItem(_Item):
    type: Literal["dynamicToolCall"]
    tool: str
    namespace: str | None = None
    arguments: Any = None
    status: str | None = None
    content_items: list[dict[str, Any]] | None = None
    success: bool | None = None
    duration_ms: int | None = None


class CollabAgentToolCallItem(_Item):
    type: Literal["collabAgentToolCall"]
    tool: str
    status: str | None = None
    sender_thread_id: str | None = None
    receiver_thread_ids: list[str] = Field(default_factory=list)
    prompt: str | None = None
    model: str | None = None


class SubAgentActivityItem(_Item):
    type: Literal["subAgentActivity"]
    kind: str | None = None
    agent_thread_id: str | None = None
    agent_path: str | None = None
    model: str | None = None


class WebSearchItem(_Item):
    type: Literal["webSearch"]
    query: str = ""
    action: dict[str, Any] | None = None
    results: list[Any] | None = None


class ImageViewItem(_Item):
    type: Literal["imageView"]
    path: str


class SleepItem(_Item):
    type: Literal["sleep"]
    duration_ms: int | None = None


class ImageGenerationItem(_Item):
    """`result` can hold inline base64 image data; it is never indexed."""

    type: Literal["imageGeneration"]
    status: str | None = None
    revised_prompt: str | None = None
    saved_path: str | None = None


class EnteredReviewModeItem(_Item):
    type: Literal["enteredReviewMode"]
    review: str = ""


class ExitedReviewModeItem(_Item):
    type: Literal["exitedReviewMode"]
    review: str = ""


class ContextCompactionItem(_Item):
    type: Literal["contextCompaction"]


class UnknownItem(_Wire):
    """An item type this code does not know (newer Codex). `raw` is the item as received."""

    type: str
    id: str | None = None
    started_at_ms: int | None = None
    completed_at_ms: int | None = None
    raw: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _keep_raw(cls, data: Any) -> Any:
        if isinstance(data, dict) and "raw" not in data:
            return {
                "type": str(data.get("type", "unknown")),
                "id": data.get("id") if isinstance(data.get("id"), str) else None,
                "startedAtMs": data.get("startedAtMs"),
                "completedAtMs": data.get("completedAtMs"),
                "raw": dict(data),
            }
        return data


KNOWN_ITEM_MODELS: dict[str, type[_Item]] = {
    "userMessage": UserMessageItem,
    "hookPrompt": HookPromptItem,
    "agentMessage": AgentMessageItem,
    "functionCallOutput": FunctionCallOutputItem,
    "plan": PlanItem,
    "reasoning": ReasoningItem,
    "commandExecution": CommandExecutionItem,
    "fileChange": FileChangeItem,
    "mcpToolCall": McpToolCallItem,
    "dynamicToolCall": DynamicToolCallItem,
    "collabAgentToolCall": CollabAgentToolCallItem,
    "subAgentActivity": SubAgentActivityItem,
    "webSearch": WebSearchItem,
    "imageView": ImageViewItem,
    "sleep": SleepItem,
    "imageGeneration": ImageGenerationItem,
    "enteredReviewMode": EnteredReviewModeItem,
    "exitedReviewMode": ExitedReviewModeItem,
    "contextCompaction": ContextCompactionItem,
}


def _item_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in KNOWN_ITEM_MODELS else "unknown"


ThreadItem = Annotated[
    Union[
        Annotated[UserMessageItem, Tag("userMessage")],
        Annotated[HookPromptItem, Tag("hookPrompt")],
        Annotated[AgentMessageItem, Tag("agentMessage")],
        Annotated[FunctionCallOutputItem, Tag("functionCallOutput")],
        Annotated[PlanItem, Tag("plan")],
        Annotated[ReasoningItem, Tag("reasoning")],
        Annotated[CommandExecutionItem, Tag("commandExecution")],
        Annotated[FileChangeItem, Tag("fileChange")],
        Annotated[McpToolCallItem, Tag("mcpToolCall")],
        Annotated[DynamicToolCallItem, Tag("dynamicToolCall")],
        Annotated[CollabAgentToolCallItem, Tag("collabAgentToolCall")],
        Annotated[SubAgentActivityItem, Tag("subAgentActivity")],
        Annotated[WebSearchItem, Tag("webSearch")],
        Annotated[ImageViewItem, Tag("imageView")],
        Annotated[SleepItem, Tag("sleep")],
        Annotated[ImageGenerationItem, Tag("imageGeneration")],
        Annotated[EnteredReviewModeItem, Tag("enteredReviewMode")],
        Annotated[ExitedReviewModeItem, Tag("exitedReviewMode")],
        Annotated[ContextCompactionItem, Tag("contextCompaction")],
        Annotated[UnknownItem, Tag("unknown")],
    ],
    Discriminator(_item_tag),
]


# --------------------------------------------------------------------------------------------
# Turn, Thread
# --------------------------------------------------------------------------------------------


class TurnError(_Wire):
    message: str = ""
    additional_details: str | None = None


class Turn(_Wire):
    """`items_view`: "full" (every item), "summary" (user + final agent messages only, the
    default of thread/turns/list) or "notLoaded" (empty)."""

    id: str
    root_turn_id: str | None = None
    items: list[ThreadItem] = Field(default_factory=list)
    items_view: str = "full"
    status: str | None = None
    error: TurnError | None = None
    started_at: int | None = None
    completed_at: int | None = None
    duration_ms: int | None = None


class GitInfo(_Wire):
    sha: str | None = None
    branch: str | None = None
    origin_url: str | None = None


class ThreadStatus(_Wire):
    type: str = "notLoaded"
    active_flags: list[str] = Field(default_factory=list)


class Thread(_Wire):
    """`source` is "cli"|"vscode"|"exec"|"appServer"|"unknown" or {"custom": str} or
    {"subAgent": "review"|"compact"|"memory_consolidation"|{"thread_spawn": {...}}|{"other": str}}.
    `createdAt`/`updatedAt` are unix seconds; `path` is the rollout path ("[UNSTABLE]")."""

    id: str
    session_id: str | None = None
    forked_from_id: str | None = None
    parent_thread_id: str | None = None
    attached_to_thread_id: str | None = None
    preview: str = ""
    ephemeral: bool = False
    history_mode: str = "legacy"
    model_provider: str | None = None
    model: str | None = None
    reasoning_effort: str | None = None
    created_at: int
    updated_at: int
    recency_at: int | None = None
    status: ThreadStatus | None = None
    path: str | None = None
    cwd: str | None = None
    cli_version: str | None = None
    originator: str | None = None
    source: str | dict[str, Any] | None = None
    thread_source: Any = None
    agent_nickname: str | None = None
    agent_role: str | None = None
    git_info: GitInfo | None = None
    name: str | None = None
    turns: list[Turn] = Field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Responses
# --------------------------------------------------------------------------------------------


class InitializeResponse(_Wire):
    user_agent: str
    codex_home: str | None = None
    platform_family: str | None = None
    platform_os: str | None = None


class ThreadListResponse(_Wire):
    data: list[Thread]
    next_cursor: str | None = None
    backwards_cursor: str | None = None


class ThreadReadResponse(_Wire):
    thread: Thread


class ThreadTurnsListResponse(_Wire):
    data: list[Turn]
    next_cursor: str | None = None
    backwards_cursor: str | None = None


class ThreadItemEntry(_Wire):
    turn_id: str
    item: ThreadItem
    started_at_ms: int | None = None
    completed_at_ms: int | None = None


class ThreadItemsListResponse(_Wire):
    data: list[ThreadItemEntry]
    next_cursor: str | None = None
    backwards_cursor: str | None = None


# --------------------------------------------------------------------------------------------
# Source kinds (v2/ThreadSourceKind) — what thread/list filters on
# --------------------------------------------------------------------------------------------

SUBAGENT_KINDS: tuple[str, ...] = (
    "subAgent",
    "subAgentReview",
    "subAgentCompact",
    "subAgentThreadSpawn",
    "subAgentOther",
)
TOP_LEVEL_KINDS: tuple[str, ...] = ("cli", "vscode", "exec", "appServer", "unknown")


def source_kind(source: str | dict[str, Any] | None) -> str:
    """The ThreadSourceKind a Thread.source falls under ("custom" for custom sources)."""
    if isinstance(source, str):
        return source
    if isinstance(source, dict):
        if "subAgent" in source:
            sub = source["subAgent"]
            if sub == "review":
                return "subAgentReview"
            if sub == "compact":
                return "subAgentCompact"
            if isinstance(sub, dict) and "thread_spawn" in sub:
                return "subAgentThreadSpawn"
            return "subAgentOther"
        if "custom" in source:
            return "custom"
    return "unknown"
