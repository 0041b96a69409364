"""Adapter: claude_code — Claude Code transcripts (`~/.claude/projects/**.jsonl`), main
sessions and sub-agents, one conversation per file; and project memory files
(`~/.claude/projects/<project>/memory/*.md`), one note per file."""

from .adapter import ClaudeCodeAdapter, parse_transcript

__all__ = ["ClaudeCodeAdapter", "parse_transcript"]
