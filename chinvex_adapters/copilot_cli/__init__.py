"""GitHub Copilot CLI sessions (`~/.copilot/session-state/<id>/events.jsonl`, the flat
`session-state/<id>.jsonl` of 0.0.342-0.0.377 and the legacy
`history-session-state/session_<id>_<ms>.json`), under `$COPILOT_HOME` or `~/.copilot` and
the XDG folders older CLIs used. Conversations' `source` is "copilot_cli"."""

from chinvex_adapters.kit.registry import Agent, Store

from .layout import copilot_homes

AGENT = Agent("copilot_cli", "GitHub Copilot CLI", "chinvex_adapters.copilot_cli.adapter:CopilotCliAdapter")
STORES = [Store("copilot_cli", "GitHub Copilot CLI", copilot_homes)]
