"""Adapter: cx_appserver."""
