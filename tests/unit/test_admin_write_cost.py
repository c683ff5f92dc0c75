"""What one admin write costs in YAML parsing: the file once, the result read back once."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from agents import store
from agents.resources import AGENTS, PROVIDERS
from agents.snapshot import ConfigHolder
from tests.configs import ORIGINAL_EXAMPLE

pytestmark = pytest.mark.django_db


@pytest.fixture
def holder(tmp_path: Path) -> ConfigHolder:
    path = tmp_path / "gateway.yaml"
    path.write_text(ORIGINAL_EXAMPLE.read_text())
    live = ConfigHolder(path)
    live.reload()
    store.create_item(
        live, AGENTS, {"name": "first", "provider": "openai", "model": "m"}, store.Author("t")
    )
    return live


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every YAML text ruamel parses from now on (its own entry point, counted)."""
    seen: list[str] = []
    load = YAML.load

    def counted(self: YAML, stream: Any) -> Any:
        seen.append(stream)
        return load(self, stream)

    monkeypatch.setattr(YAML, "load", counted)
    yield seen


def test_item_write_parses_the_file_once_and_reads_the_result_back_once(
    holder: ConfigHolder, parses: list[str]
) -> None:
    written = store.create_item(
        holder, AGENTS, {"name": "second", "provider": "openai", "model": "m"}, store.Author("t")
    )

    assert written.revision is not None and "+  - name: second" in written.revision.diff
    assert len(parses) == 2
    assert parses[1] == holder.path.read_text() == holder.snapshot.text


def test_whole_file_json_write_parses_the_file_once_and_reads_the_result_back_once(
    holder: ConfigHolder, parses: list[str]
) -> None:
    providers = store.masked_config_data(holder)[0]["providers"]
    providers["openai"]["timeout"] = 30
    parses.clear()

    store.replace_config(holder, store.Author("t"), data={"providers": providers})

    assert len(parses) == 2
    assert store.entry(holder, PROVIDERS, "openai") == {"api_key": "sk-…0042", "timeout": 30}
    assert "api_key: sk-openai-example-0042\n" in holder.path.read_text()
