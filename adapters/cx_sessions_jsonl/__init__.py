"""Adapter: cx_sessions_jsonl."""
