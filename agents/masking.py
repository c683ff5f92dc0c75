"""Secrets never leave the server once written (docs/admin.md, "Secret masking").

Reads show an API key (a provider's ``api_key``, its billing ``admin_key``) as
``sk-…abcd`` (first 3 and last 4 characters, only when it is at least 20 characters long,
else ``********``) and a password or client secret always as ``********``; ``${ENV}``
references are shown as written (they are not secrets). A write that sends back the mask
of the stored secret keeps the stored secret; one that sends a value that looks like a
mask but is not the stored secret's mask is refused, since the mask would otherwise be
written into the file.
"""

from collections.abc import Callable, Iterable, Iterator
from typing import Any

MARK = "…"
HIDDEN = "********"
_SHOWN_KEY_LENGTH = 20
_API_KEYS = ("api_key", "admin_key")  # shown by their ends when long enough
# Where secrets live, as paths of keys; "*" stands for any key of a map.
SECRET_PATHS = (
    ("providers", "*", "api_key"),
    ("providers", "*", "billing", "admin_key"),
    ("auth", "*", "basic", "password"),
    ("auth", "*", "oidc", "client_secret"),
    ("telemetry", "headers", "*"),  # a collector's credentials
    ("mcp", "*", "oauth", "client_secret"),  # a static client's (Coulisse's shape)
    # Coulisse's shapes of the same kinds of secrets
    ("telemetry", "otlp", "headers", "*"),
    ("auth", "mcp_consumer_secret"),
    ("auth", "mcp_admin", "token"),
)


class ForeignMask(ValueError):
    """A write sent a masked value that is not the mask of the stored secret."""

    def __init__(self, path: tuple[str, ...]) -> None:
        self.problem = (
            f"{'.'.join(path)}: looks like a masked secret but is not the mask of the stored "
            "one (send the real secret, or the mask exactly as the admin shows it now)"
        )
        super().__init__(self.problem)


def mask(value: Any, key: str = "api_key") -> Any:
    """How reads show the secret ``value`` stored under ``key``."""
    if not isinstance(value, str) or not value or "${" in value:
        return value
    if key in _API_KEYS and len(value) >= _SHOWN_KEY_LENGTH:
        return f"{value[:3]}{MARK}{value[-4:]}"
    return HIDDEN


def looks_masked(value: Any) -> bool:
    return isinstance(value, str) and (MARK in value or HIDDEN in value)


def keep_secret(sent: Any, stored: Any, path: tuple[str, ...]) -> Any:
    """The stored secret when ``sent`` is its mask, else what was sent (unless it is a
    mask of something else: ``ForeignMask``)."""
    if sent == stored:
        return sent
    if isinstance(stored, str) and stored and sent == mask(stored, path[-1]):
        return stored
    if looks_masked(sent):
        raise ForeignMask(path)
    return sent


def secret_slots(data: Any) -> Iterator[tuple[tuple[str, ...], dict[str, Any], str]]:
    """(path, mapping, key) of every secret in a config (plain or round-trip data)."""
    for pattern in SECRET_PATHS:
        yield from _walk(data, pattern, ())


def _walk(
    node: Any, pattern: tuple[str, ...], path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], dict[str, Any], str]]:
    if not isinstance(node, dict):
        return
    head, rest = pattern[0], pattern[1:]
    keys = [key for key in node if isinstance(key, str)] if head == "*" else [head]
    for key in keys:
        if key not in node:
            continue
        if rest:
            yield from _walk(node[key], rest, (*path, key))
        elif isinstance(node[key], str):
            yield (*path, key), node, key


def secrets(data: Any) -> dict[str, str]:
    """Every secret value of a config and its mask (``${ENV}`` references left out)."""
    found = {}
    for _, mapping, key in secret_slots(data):
        value = mapping[key]
        if value and mask(value, key) != value:
            found[value] = mask(value, key)
    return found


def redact(text: str, hidden: dict[str, str]) -> str:
    """``text`` with every secret of ``hidden`` (value: mask) replaced by its mask (but
    those under 4 characters, which would garble the text more than they could reveal)."""
    for value in sorted(hidden, key=len, reverse=True):
        if len(value) >= 4:
            text = text.replace(value, hidden[value])
    return text


def redact_all(texts: Iterable[str], hidden: dict[str, str]) -> list[str]:
    return [redact(text, hidden) for text in texts]


def mask_config(data: Any) -> None:
    """Mask every secret of a config in place."""
    for _, mapping, key in list(secret_slots(data)):
        mapping[key] = mask(mapping[key], key)


def keep_config_secrets(
    data: Any, stored: Any, assign: Callable[[Any, str, str], None] = dict.__setitem__
) -> None:
    """Put back, in place (with ``assign``), the stored secrets that ``data`` sends masked;
    ``ForeignMask`` if it sends a mask of something else."""
    for path, mapping, key in list(secret_slots(data)):
        value = keep_secret(mapping[key], _lookup(stored, path), path)
        if value is not mapping[key]:
            assign(mapping, key, value)


def _lookup(data: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data
