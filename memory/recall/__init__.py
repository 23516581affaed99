"""Recall over raw messages (and, as it lands, ChatHistory), scoped to a chat."""
