"""Adapter: chat_export — ChatGPT data exports (conversations.json, export zip) and markdown
chat exports (pionxzh/chatgpt-exporter, convoviz and common heading styles)."""

from .adapter import ChatExportAdapter, precedence_key

__all__ = ["ChatExportAdapter", "precedence_key"]
