"""Reusable widgets. They never import the engine: rows arrive as attributes, intents leave as messages."""
