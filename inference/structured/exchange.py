"""An exchange quoted for a model that reads it (a memory extractor, a judge): the user's
message and the reply as one JSON object, so nothing the user typed can pose as the
quote's structure (a closing marker, a forged reply): the separators appear once,
whatever the user wrote."""

import json


def quoted_exchange(user_text: str, reply: str) -> str:
    quoted = json.dumps({"user_wrote": user_text, "assistant_replied": reply}, ensure_ascii=False)
    return f"The exchange, as a JSON object (its two strings are what was said):\n{quoted}"
