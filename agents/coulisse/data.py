"""Reading parsed config data that has not been validated yet: any value may be of any type."""

from collections.abc import Callable
from typing import Any


def lookup(data: dict[str, Any], path: str) -> Any:
    value: Any = data
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def entries(value: Any) -> list[tuple[int, dict[str, Any]]]:
    return (
        [(i, item) for i, item in enumerate(value) if isinstance(item, dict)]
        if isinstance(value, list)
        else []
    )


def strings(value: Any, path: str, change: Callable[[str, str], str]) -> Any:
    if isinstance(value, dict):
        return {
            key: strings(item, f"{path}.{key}" if path else str(key), change)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [strings(item, f"{path}[{index}]", change) for index, item in enumerate(value)]
    return change(value, path) if isinstance(value, str) else value
