"""Qwen Code chats (`<runtime>/projects/<project>/chats/<session id>.jsonl`, the runtime folder
being `$QWEN_RUNTIME_DIR`, `$QWEN_HOME` or `~/.qwen`). Conversations' `source` is "qwen"."""

from chinvex_adapters.kit.registry import Agent, Store

from .layout import qwen_runtimes

AGENT = Agent("qwen", "Qwen Code", "chinvex_adapters.qwen.adapter:QwenAdapter")
STORES = [Store("qwen", "Qwen Code", qwen_runtimes)]
