"""What every dialect's request body model shares: unknown fields are ignored, as
OpenAI-compatible servers do (known fields are typed, so a wrong type is a 400 naming the
field), and a conversation too long is refused before its items are read."""

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic_core import PydanticCustomError

MAX_MESSAGES = 10_000  # messages (or input items) in one request


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


def counted_before_read(value: Any) -> Any:
    """Refuse a list over ``MAX_MESSAGES`` before its items are validated one by one
    (pydantic checks ``max_length`` only after them: seconds for a million items)."""
    if isinstance(value, list) and len(value) > MAX_MESSAGES:
        raise PydanticCustomError(
            "too_long",
            "List should have at most {maximum} items, not {length}",
            {"maximum": MAX_MESSAGES, "length": len(value)},
        )
    return value
