"""Aider's chat history (`.aider.chat.history.md`): each `# aider chat started at` begins a
session; one conversation each."""
