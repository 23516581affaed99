"""Mid-term memory: packing cached topics into ChatHistory (LLM or offline digest), near-duplicate
titles, and reinforcement of recalled rows."""

from memory.history.digest import Digest, offline_digest
from memory.history.pack import Packed, PackOptions, pack_entry
from memory.history.reinforce import reinforce
from memory.history.titles import title_ratio

__all__ = ["Digest", "PackOptions", "Packed", "offline_digest", "pack_entry", "reinforce", "title_ratio"]
