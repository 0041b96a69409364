"""Contexts: the registry of context folders and their context.json, and which context a command
means when it names none."""
