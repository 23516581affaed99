"""Qunyi's memory domain: neutral types, storage, text, recall, topics, forgetting, jargon, people, notes.

It knows no platform and no scheduler; `bot/` wires it to both.
"""
