"""Optional dense vectors: embedders behind `memory.ports.Embedder`, stored per row with the model name,
filled in by a backfill job. Recall works without them; with them it adds dense similarity."""

from memory.embeddings.factory import EMBEDDER_KINDS, EmbedderConfig, make_embedder
from memory.embeddings.store import VectorIndex, load_vectors, save_vectors

__all__ = ["EMBEDDER_KINDS", "EmbedderConfig", "VectorIndex", "load_vectors", "make_embedder", "save_vectors"]
