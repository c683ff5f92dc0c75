"""How entries of each collection read in HTML: table columns and detail fields."""

from typing import Any

from django.forms.utils import pretty_name

from adminui.editing.forms import FORMS, dump_yaml
from agents.resources import Resource

# Columns of each collection's table, after its key.
COLUMNS: dict[str, tuple[str, ...]] = {
    "agents": ("provider", "model", "judges", "subagents"),
    "judges": ("provider", "model", "sampling_rate", "rubrics"),
    "experiments": ("strategy", "variants"),
    "providers": ("kind", "api_key", "base_url"),
    "mcp": ("transport", "command", "url"),
}


def cell(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(
            str(item.get("agent", item.get("server", item)))
            if isinstance(item, dict)
            else str(item)
            for item in value
        )
    if isinstance(value, dict):
        return ", ".join(str(key) for key in value)
    return "" if value is None else str(value)


def rows(resource: Resource, entries: dict[str, dict[str, Any]]) -> list[tuple[str, list[str]]]:
    columns = COLUMNS[resource.section]
    return [(key, [cell(item.get(column)) for column in columns]) for key, item in entries.items()]


def headers(resource: Resource) -> list[str]:
    """The table's column titles: the labels the collection's form gives its fields."""
    fields = FORMS[resource.section].base_fields
    return [
        str(fields[name].label or pretty_name(name))
        for name in (resource.key_field, *COLUMNS[resource.section])
    ]


def fields(item: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(name, text, shown as a block) for every field of an entry, unknown ones included."""
    shown = []
    for name, value in item.items():
        if isinstance(value, list) and not any(isinstance(entry, (dict, list)) for entry in value):
            shown.append((name, cell(value), False))
        elif isinstance(value, (dict, list)) and value:
            shown.append((name, dump_yaml(value), True))
        elif isinstance(value, str) and "\n" in value:
            shown.append((name, value, True))
        else:
            shown.append((name, cell(value), False))
    return shown
