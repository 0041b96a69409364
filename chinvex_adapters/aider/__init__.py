"""Aider's chat history (`.aider.chat.history.md`): each `# aider chat started at` begins a
session; one conversation each. Aider keeps it in the repository it runs in (no central
store): the repo adapter finds it there."""

from chinvex_adapters.kit.registry import Agent, Store

AGENT = Agent("aider", "Aider", "chinvex_adapters.aider.adapter:AiderAdapter")
STORES: list[Store] = []
