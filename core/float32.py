"""Vectors as little-endian float32 bytes: how embeddings are stored, and what the
OpenAI embeddings API's base64 encoding carries."""

import struct
from collections.abc import Iterable


def packed(vector: Iterable[float]) -> bytes:
    values = list(vector)
    return struct.pack(f"<{len(values)}f", *values)
