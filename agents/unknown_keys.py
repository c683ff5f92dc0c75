"""Keys the schema does not know inside the sections it does (an agent's ``histroy``):
the config still loads (unknown keys are kept and ignored, docs/configuration.md), but
each is named with its path and the closest known key, so a typo is not silently a
default. Unknown top-level sections are left alone: they are accepted on purpose (another
service's sections in a shared file)."""

import difflib
from typing import Any

from pydantic import BaseModel

from agents.schema import Config


def unknown_keys(config: Config) -> list[str]:
    """One warning per unknown key, e.g. ``agents[0].histroy: not a key the gateway
    knows, ignored (did you mean `history`?)``."""
    found: list[str] = []
    for name in type(config).model_fields:
        _walk(getattr(config, name), name, found)
    return found


def _walk(value: Any, path: str, found: list[str]) -> None:
    if isinstance(value, BaseModel):
        known = list(type(value).model_fields)
        for key in value.model_extra or {}:
            closest = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean `{closest[0]}`?)" if closest else ""
            found.append(f"{path}.{key}: not a key the gateway knows, ignored{hint}")
        for name in known:
            _walk(getattr(value, name), f"{path}.{name}", found)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _walk(item, f"{path}[{index}]", found)
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, f"{path}.{key}", found)
