"""The pi coding agent (`~/.pi/agent/sessions`, or `$PI_CODING_AGENT_DIR/sessions`) and OpenClaw
(formerly Clawdbot, Moltbot), which embeds pi and writes the same transcripts
(`~/.openclaw/agents/<agent>/sessions`, or under `$OPENCLAW_STATE_DIR`). One adapter reads
both; each conversation's `source` is "pi" or "openclaw"."""

from chinvex_adapters.kit.registry import Agent, Store

from .layout import openclaw_stores, pi_stores

AGENT = Agent("pi", "pi coding agent", "chinvex_adapters.pi.adapter:PiAdapter")
STORES = [
    Store("pi", "pi coding agent", pi_stores),
    Store("openclaw", "OpenClaw", openclaw_stores, adapter="pi"),
]
