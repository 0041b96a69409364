"""Adapter: claude_code."""
