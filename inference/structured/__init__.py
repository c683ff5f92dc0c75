"""Structured output on every provider: the instruction a reply must follow, and checking
and repairing replies against their JSON Schema."""
