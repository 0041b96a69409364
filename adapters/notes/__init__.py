"""Adapter: notes."""
