"""Vectors as little-endian float32 blobs, L2-normalised so cosine is a dot product."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

Matrix = NDArray[np.float32]
BLOB_DTYPE = np.dtype("<f4")
VALUE_BYTES = BLOB_DTYPE.itemsize
"""Bytes one value of a stored vector takes."""


# Rows whose largest value lies outside this range are scaled down (or up) before float32 takes them:
# past it their squares leave float32's range, and the norm became inf (the row NaN) or 0 (zeros).
_SAFE_PEAK = (1e-18, 1e18)


def normalized(vectors: Sequence[Sequence[float]]) -> Matrix:
    """Rows as a float32 matrix of unit length (zero rows stay zero)."""
    wide = np.asarray(vectors, dtype=np.float64)
    if wide.ndim != 2:
        raise ValueError(f"expected a list of vectors, got an array of shape {wide.shape}")
    if wide.size:
        peak = np.abs(wide).max(axis=1, keepdims=True)
        odd = (peak > _SAFE_PEAK[1]) | ((peak > 0) & (peak < _SAFE_PEAK[0]))
        if odd.any():  # other rows are left as they were, to the bit
            wide = np.where(odd, wide / np.where(odd, peak, 1.0), wide)
    matrix = wide.astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32, copy=False)


def to_blob(vector: Matrix) -> bytes:
    return np.asarray(vector, dtype=BLOB_DTYPE).tobytes()


def from_blob(blob: bytes, dimension: int) -> Matrix:
    vector = np.frombuffer(blob, dtype=BLOB_DTYPE)
    if vector.shape[0] != dimension:
        raise ValueError(f"stored vector has {vector.shape[0]} values, expected {dimension}")
    return vector
