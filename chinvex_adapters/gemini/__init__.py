"""Gemini CLI chats (`~/.gemini/tmp/<project>/chats/session-*.json[l]`, or under
`$GEMINI_CLI_HOME/.gemini`): legacy whole-file JSON and the current append-only JSONL,
sub-agent chats included. Conversations' `source` is "gemini"."""

from chinvex_adapters.kit.registry import Agent, Store

from .layout import gemini_homes

AGENT = Agent("gemini", "Gemini CLI", "chinvex_adapters.gemini.adapter:GeminiAdapter")
STORES = [Store("gemini", "Gemini CLI", gemini_homes)]
