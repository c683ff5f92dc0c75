"""What the model is told when its reply must be JSON (of a schema, when one is given)."""

import json

from inference.neutral.types import ResponseFormat


def structured_output_instruction(response_format: ResponseFormat) -> str:
    if response_format.schema is None:
        return "Reply with a single valid JSON object and nothing else: no prose, no code fence."
    return (
        "Reply with a single JSON value that validates against this JSON Schema, and nothing "
        "else: no prose, no code fence.\n" + json.dumps(response_format.schema, sort_keys=True)
    )
