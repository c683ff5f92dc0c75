"""Which requests belong to the OpenAI-compatible surface."""


def is_v1_path(path: str) -> bool:
    """``/v1`` itself or anything under it (not ``/v1beta`` or ``/v10``)."""
    return path == "/v1" or path.startswith("/v1/")
