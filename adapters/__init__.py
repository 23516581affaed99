"""Platform adapters and chat-export importers; each yields neutral `ChatMessage`s."""
