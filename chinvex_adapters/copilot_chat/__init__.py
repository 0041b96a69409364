"""VS Code Copilot Chat sessions: `<user dir>/workspaceStorage/<workspace>/chatSessions/<id>.json`
(flat, VS Code < 1.109) or `.jsonl` (mutation log, >= 1.109), and
`globalStorage/emptyWindowChatSessions/`, in every VS Code-based editor's user folder
(portable and `VSCODE_APPDATA` installs too). Conversations' `source` is "copilot_chat"."""

from chinvex_adapters.kit.registry import Agent, Store

from .layout import chat_stores

AGENT = Agent("copilot_chat", "GitHub Copilot Chat (VS Code)",
              "chinvex_adapters.copilot_chat.adapter:CopilotChatAdapter")
STORES = [Store("copilot_chat", "GitHub Copilot Chat (VS Code)", chat_stores)]
