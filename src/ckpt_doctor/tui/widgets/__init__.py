"""Widgets of the app, one idea per module."""
