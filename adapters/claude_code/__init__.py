"""Adapter: claude_code — Claude Code transcripts (`~/.claude/projects/**.jsonl`), main
sessions and sub-agents, one conversation per file."""

from .adapter import ClaudeCodeAdapter, parse_transcript

__all__ = ["ClaudeCodeAdapter", "parse_transcript"]
