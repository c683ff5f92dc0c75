"""Turn the text of a config file into a validated ``Config`` snapshot."""

import os
import re
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from agents.schema import Config
from agents.validation import cross_validate

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(Exception):
    """The config is unusable; ``problems`` holds every path-named message."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def parse_yaml(text: str) -> Any:
    try:
        return YAML(typ="safe", pure=True).load(text)
    except YAMLError as error:
        raise ConfigError([f"(file): not valid YAML: {error}"]) from error


def load_config_text(text: str) -> Config:
    return load_config_data(parse_yaml(text))


def load_config_data(data: Any) -> Config:
    """Validate plain data (as parsed from YAML or JSON) into a ``Config``."""
    if not isinstance(data, dict):
        raise ConfigError(["(file): the config must be a mapping of sections"])
    problems: list[str] = []
    expanded = _expand_env(data, "", problems)
    if problems:
        raise ConfigError(problems)
    try:
        config = Config.model_validate(expanded)
    except ValidationError as error:
        raise ConfigError([_describe(item) for item in error.errors()]) from error
    problems = cross_validate(config)
    if problems:
        raise ConfigError(problems)
    return config


def format_path(location: tuple[str | int, ...]) -> str:
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(file)"


def _describe(error: dict) -> str:
    location = tuple(part for part in error["loc"] if not _is_union_tag(part))
    message = error["msg"]
    return f"{format_path(location)}: {message[:1].lower()}{message[1:]}"


def _is_union_tag(part: str | int) -> bool:
    # pydantic names the tried member of a union in the location ("str", "list[str]").
    return isinstance(part, str) and ("[" in part or part in {"str", "int", "float", "bool"})


def _expand_env(value: Any, path: str, problems: list[str]) -> Any:
    """Replace ``${NAME}`` (or ``${NAME:-default}``) in every string with the environment's value."""
    if isinstance(value, dict):
        return {
            key: _expand_env(item, f"{path}.{key}" if path else str(key), problems)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_expand_env(item, f"{path}[{index}]", problems) for index, item in enumerate(value)]
    if not isinstance(value, str) or "${" not in value:
        return value

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in os.environ:
            return os.environ[name]
        if default is not None:
            return default
        problems.append(f"{path}: environment variable {name} is not set")
        return ""

    return _ENV_REFERENCE.sub(substitute, value)
