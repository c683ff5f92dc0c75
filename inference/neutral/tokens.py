"""A rough token count for text, where no provider count is available.

About four characters a token for English; used to trim replayed history and to bill
a stream that was cut before the provider reported its usage.
"""


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4
