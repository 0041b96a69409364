"""Cursor: the agent transcripts (`~/.cursor/projects/<slug>/agent-transcripts/`, plain text
and JSONL, sub-agents included), the cursor-agent CLI's `~/.cursor/chats/<md5>/<id>/store.db`,
and the IDE's `<Cursor user dir>/globalStorage/state.vscdb` (one conversation per composer),
with the chats Cursor before 0.43 kept in `workspaceStorage/<hash>/state.vscdb`.
`CURSOR_CONFIG_DIR` and `$XDG_CONFIG_HOME/cursor` are honoured for the CLI's folder."""

from chinvex_adapters.kit.registry import Agent, Store

from .layout import chat_stores, ide_stores, transcript_stores, workspace_stores

AGENT = Agent("cursor", "Cursor", "chinvex_adapters.cursor.adapter:CursorAdapter")
STORES = [
    Store("cursor", "Cursor agent transcripts", transcript_stores),
    Store("cursor", "Cursor CLI chats", chat_stores),
    Store("cursor", "Cursor IDE chats", ide_stores),
    Store("cursor", "Cursor IDE workspace chats (before 0.43)", workspace_stores),
]
