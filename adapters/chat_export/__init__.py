"""Adapter: chat_export."""
