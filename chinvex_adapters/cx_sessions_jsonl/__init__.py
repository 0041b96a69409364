"""Adapter `cx_sessions_jsonl`: Codex CLI/IDE rollout files (`$CODEX_HOME/sessions/**/rollout-*.jsonl[.zst]`).

`CodexRolloutAdapter` turns each rollout into one `ConversationDoc` (doc id shared with the
app-server adapter through `chinvex.ids.thread_doc_id`). `find_rollout_for_thread` and
`walk_jsonl` let other adapters map a thread id to its file.
"""

from .adapter import CodexRolloutAdapter
from .discover import find_rollout_for_thread, thread_id_from_name, walk_jsonl

__all__ = ["CodexRolloutAdapter", "find_rollout_for_thread", "thread_id_from_name", "walk_jsonl"]
