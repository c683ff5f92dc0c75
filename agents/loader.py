"""Turn the text of a config file into a validated ``Config`` snapshot.

Validation runs in three stages (environment references, types, cross-section rules)
and each reports every problem it finds: an unset variable does not hide a type error,
and a type error hides only the rules about the entry it is in.
"""

import os
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml.error import YAMLError

from agents import coulisse, masking
from agents.schema import Config
from agents.skills.catalog import DEFAULT_DIR, discover
from agents.validation import cross_validate, skill_warnings, unknown_keys
from agents.yamldoc import describe_yaml_error, parse

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# Sections whose entries are validated one by one: an entry with a type error is left
# out of the cross-section rules rather than hiding them all.
_LIST_SECTIONS = ("agents", "judges", "experiments")
_MAP_SECTIONS = ("providers", "mcp")
_ENTRY_PATH = re.compile(rf"^({'|'.join(_LIST_SECTIONS)})\[(\d+)\]")


class ConfigError(Exception):
    """The config is unusable; ``problems`` holds every path-named message."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def parse_yaml(text: str) -> Any:
    try:
        return parse(text)
    except YAMLError as error:
        raise ConfigError([f"(file): not valid YAML: {describe_yaml_error(error)}"]) from error


def load_config_text(text: str, base: Path | None = None) -> Config:
    return load_config_data(parse_yaml(text), base)


def load_config_data(data: Any, base: Path | None = None) -> Config:
    """Validate plain data (as parsed from YAML or JSON) into a ``Config``. ``base``: the
    config file's folder, where its relative paths start (None: the working directory)."""
    if not isinstance(data, dict):
        raise ConfigError(["(file): the config must be a mapping of sections"])
    problems: list[str] = []
    expanded, warnings = coulisse.translate(_expand_env(data, "", problems), problems)
    try:
        config = Config.model_validate(expanded)
    except ValidationError as error:
        problems += [_describe(item) for item in error.errors()]
        problems += _rules_of_well_typed_entries(expanded, error, base)
        raise ConfigError(_without_secrets(problems, data, expanded)) from error
    _locate(config, base)
    problems += cross_validate(config)
    if problems:
        raise ConfigError(_without_secrets(problems, data, expanded))
    unknown = [warning for warning in unknown_keys(config) if not coulisse.reads(warning.path)]
    config._warnings = (*warnings, *skill_warnings(config), *unknown)
    return config


def _locate(config: Config, base: Path | None) -> None:
    """What the config names on disk: its folder (``base``), where its relative paths
    start, and the skills under ``skills.dir``, read with every load so that a change to
    a SKILL.md applies (or is refused) like a change to the file. Without a ``skills``
    section, ``./skills`` is read when it exists, as Coulisse does."""
    if base is not None:
        config._base = base
    if config.skills is not None:
        config._skills = discover(config.folder(config.skills.dir))
    elif (default := config.folder(DEFAULT_DIR)).is_dir():  # Coulisse's: scanned unasked
        config._skills = discover(default)


def _without_secrets(problems: list[str], *configs: dict[str, Any]) -> list[str]:
    """``problems`` with every secret value of the config (as written or expanded) masked."""
    hidden: dict[str, str] = {}
    for config in configs:
        hidden.update(masking.secrets(config))
    return masking.redact_all(problems, hidden)


def _rules_of_well_typed_entries(
    data: dict[str, Any], error: ValidationError, base: Path | None
) -> list[str]:
    """The cross-section problems of the entries without type errors.

    Each entry with a type error is taken out (a top-level value falls back to its
    default); problems that name a removed entry, or come from a removed section,
    would only echo the type error and are left out.
    """
    reduced = dict(data)
    removed_lists: dict[str, list[int]] = {}
    removed_names: set[str] = set()
    for item in error.errors():
        location = item["loc"]
        section = str(location[0])  # a field of the config: always a name
        value = reduced.get(section)
        if section in _LIST_SECTIONS and len(location) > 1 and isinstance(value, list):
            index = location[1]
            removed_lists.setdefault(str(section), []).append(int(index))
            entry = value[index] if isinstance(index, int) and index < len(value) else None
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                removed_names.add(entry["name"])
        elif section in _MAP_SECTIONS and len(location) > 1 and isinstance(value, dict):
            reduced[section] = {key: item for key, item in value.items() if key != location[1]}
            removed_names.add(str(location[1]))
        else:
            reduced.pop(section, None)
    kept_positions: dict[str, list[int]] = {}
    for section, indexes in removed_lists.items():
        entries = reduced[section]
        kept_positions[section] = [i for i in range(len(entries)) if i not in indexes]
        reduced[section] = [entries[i] for i in kept_positions[section]]
    try:
        config = Config.model_validate(reduced)
    except ValidationError:
        return []
    _locate(config, base)
    # A removed name shows quoted in a problem: 'quality', or 'quality.accuracy' (a metric).
    mentions = re.compile("|".join(f"'{re.escape(name)}['.]" for name in removed_names) or "$^")
    # A section emptied by removing entries, or removed whole, only echoes type errors.
    removed_sections = (
        (data.keys() - reduced.keys())
        | {section for section in removed_lists if not reduced[section]}
        | {section for section in _MAP_SECTIONS if data.get(section) and not reduced.get(section)}
    )
    # So does a problem that asks for a field of a removed section ("needs skills.dir").
    asks = re.compile("|".join(rf"\b{re.escape(name)}\.\w" for name in removed_sections) or "$^")
    problems = []
    for problem in cross_validate(config):
        if mentions.search(problem) or problem.split(":")[0] in removed_sections:
            continue
        if asks.search(problem.partition(": ")[2]):
            continue
        problems.append(_ENTRY_PATH.sub(lambda m: _original_path(m, kept_positions), problem))
    return problems


def _original_path(match: re.Match[str], kept_positions: dict[str, list[int]]) -> str:
    section, index = match.group(1), int(match.group(2))
    positions = kept_positions.get(section)
    return f"{section}[{positions[index] if positions else index}]"


def format_path(location: tuple[str | int, ...]) -> str:
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(file)"


def _describe(error: Any) -> str:
    location = tuple(part for part in error["loc"] if not is_union_tag(part))
    message = error["msg"]
    return f"{format_path(location)}: {message[:1].lower()}{message[1:]}"


def is_union_tag(part: str | int) -> bool:
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
        found = os.environ.get(name)
        if found:
            return found
        if default is not None:
            return default
        # An empty variable is a forgotten one as often as an unset one (compose's
        # ``${KEY:-}``): write ``${NAME:-}`` to allow it.
        state = "is not set" if found is None else "is empty"
        problems.append(f"{path}: environment variable {name} {state}")
        return ""

    return _ENV_REFERENCE.sub(substitute, value)
