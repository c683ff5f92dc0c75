"""Vectors as little-endian float32 bytes: how embeddings are stored, and what the
OpenAI embeddings API's base64 encoding carries. A vector is a one-dimensional numpy
array; numpy is imported on the first call here (a process that embeds nothing never
loads it)."""

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

type Vector = np.ndarray  # one dimension


def packed(vector: "Sequence[float] | np.ndarray") -> bytes:
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def unpacked(data: bytes) -> Vector:
    """The vector of ``data`` (read-only: it shares their memory)."""
    import numpy as np

    return np.frombuffer(data, dtype="<f4")


def from_numbers(values: list[float]) -> Vector:
    """A vector of JSON numbers, exactly as they were sent (float64)."""
    import numpy as np

    vector = np.asarray(values, dtype=np.float64)
    if vector.ndim != 1:
        raise ValueError("a vector is one list of numbers")
    return vector
