"""Topics: online thread disentanglement of a chat stream (the offline topic check)."""

from memory.topics.disentangle import Disentangler
from memory.topics.message import ThreadMessage
from memory.topics.params import DisentangleParams

__all__ = ["DisentangleParams", "Disentangler", "ThreadMessage"]
