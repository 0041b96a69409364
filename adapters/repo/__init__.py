"""Adapter: repo."""
