"""Secrets never leave the server once written: reads show ``sk-…abcd``.

``${ENV}`` references are shown as written (they are not secrets). A write that sends a
masked value back keeps the stored secret.
"""

from collections.abc import Iterator
from typing import Any

MARK = "…"
# Where secrets live, as paths of keys; "*" stands for any key of a map.
SECRET_PATHS = (
    ("providers", "*", "api_key"),
    ("auth", "*", "basic", "password"),
    ("auth", "*", "oidc", "client_secret"),
)


def mask(value: Any) -> Any:
    if not isinstance(value, str) or not value or "${" in value:
        return value
    if len(value) < 12:
        return MARK
    return f"{value[:3]}{MARK}{value[-4:]}"


def keep_secret(sent: Any, stored: Any) -> Any:
    """The stored secret when ``sent`` is its masked form, else what was sent."""
    if isinstance(stored, str) and stored and sent == mask(stored) and sent != stored:
        return stored
    return sent


def secret_slots(data: Any) -> Iterator[tuple[tuple[str, ...], dict, str]]:
    """(path, mapping, key) of every secret in a config (plain or round-trip data)."""
    for pattern in SECRET_PATHS:
        yield from _walk(data, pattern, ())


def _walk(node: Any, pattern: tuple[str, ...], path: tuple[str, ...]):
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


def mask_config(data: Any) -> None:
    """Mask every secret of a config in place."""
    for _, mapping, key in list(secret_slots(data)):
        mapping[key] = mask(mapping[key])


def keep_config_secrets(data: Any, stored: Any) -> None:
    """Put back, in place, the stored secrets that ``data`` sends masked."""
    for path, mapping, key in list(secret_slots(data)):
        mapping[key] = keep_secret(mapping[key], _lookup(stored, path))


def _lookup(data: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data
