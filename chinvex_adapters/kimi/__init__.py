"""Moonshot's Kimi agents: Kimi Code (`~/.kimi-code/sessions`, or `$KIMI_CODE_HOME/sessions`)
and the Python Kimi CLI (`~/.kimi/sessions`, or `$KIMI_SHARE_DIR/sessions`). One conversation
per session folder, sub-agents included."""

from chinvex_adapters.kit.registry import Agent, Store

from .layout import kimi_stores

AGENT = Agent("kimi", "Kimi", "chinvex_adapters.kimi.adapter:KimiAdapter")
STORES = [Store("kimi", "Kimi Code and Kimi CLI", kimi_stores)]
