"""HTML forms of the admin: one per collection, decoding form bodies into the API's schema.

A form only turns text into data (lists from checkboxes, YAML text areas into objects);
every rule about the config is left to the config validator, whose messages are then
shown next to the field they name.
"""

import io
import re
from typing import Any, ClassVar, cast

from django import forms
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from agents.resources import AGENTS, EXPERIMENTS, JUDGES, MCP, PROVIDERS, Resource
from agents.yamldoc import describe_yaml_error, parse
from core.providerkinds import KIND_NAMES


class NamesField(forms.MultipleChoiceField):
    """Checkboxes of names; a name that is not offered any more is still accepted."""

    widget = forms.CheckboxSelectMultiple

    def valid_value(self, value: str) -> bool:
        return True


class YamlField(forms.CharField):
    """A text area holding a YAML list or mapping."""

    widget = forms.Textarea(attrs={"rows": 4, "class": "code", "spellcheck": "false"})

    def __init__(self, *, expects: type | tuple[type, ...], **kwargs: Any) -> None:
        self.expects = expects
        super().__init__(required=False, strip=False, **kwargs)

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value) or ""
        if not text.strip():
            return None
        try:
            data = parse(text)
        except YAMLError as error:
            raise forms.ValidationError(f"Not valid YAML: {describe_yaml_error(error)}") from error
        if isinstance(data, bool) or not isinstance(data, self.expects):
            kind = (
                "list"
                if self.expects is list
                else "mapping"
                if self.expects is dict
                else "mapping or a number"
            )
            raise forms.ValidationError(f"Write a YAML {kind}.")
        return data

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, (list, dict)):
            return dump_yaml(value) if value else ""
        return value


def _upstreams(example: str) -> YamlField:
    return YamlField(
        expects=list, help_text=f"YAML list, e.g. “- {{{example}}}” (docs: resilience)."
    )


class LinesField(forms.CharField):
    """A text area with one value per line."""

    widget = forms.Textarea(attrs={"rows": 3, "class": "code", "spellcheck": "false"})

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, **kwargs)

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list) else value


def dump_yaml(value: Any) -> str:
    yaml = YAML()
    yaml.default_flow_style = False
    out = io.StringIO()
    yaml.dump(value, out)
    return out.getvalue()


def _text(**kwargs: Any) -> forms.CharField:
    return forms.CharField(required=False, **kwargs)


class ResourceForm(forms.Form):
    """The form of one collection's entries; ``config`` is the file's data (for choices and
    for placing the validator's messages), ``key`` the entry edited (None: a new one)."""

    resource: ClassVar[Resource]
    # Fields holding a list of names, and where the choices come from.
    choices_from: ClassVar[dict[str, tuple[str, ...]]] = {}

    def __init__(
        self,
        *args: Any,
        config: dict[str, Any] | None = None,
        key: str | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.key = key
        self.config = config = config or {}
        for field, sections in self.choices_from.items():
            names = [
                name
                for section in sections
                for name in _names(config, section)
                if not (self.resource.is_list and name == key)
            ]
            cast(forms.ChoiceField, self.fields[field]).choices = [(name, name) for name in names]
        if "provider" in self.fields:
            providers = list(config.get("providers") or {})
            self.fields["provider"].widget = forms.Select(
                choices=[("", "— choose —")] + [(kind, kind) for kind in providers]
            )
        if key is not None:
            self.fields[self.key_field].initial = key
            self.fields[self.key_field].disabled = True
            self.fields[self.key_field].required = False

    @property
    def key_field(self) -> str:
        return self.resource.key_field

    @property
    def creating(self) -> bool:
        return self.key is None

    def body(self) -> dict[str, Any]:
        """The cleaned values as the schema's data: empty values are left out."""
        data = {}
        for name, value in self.cleaned_data.items():
            if name == self.key_field and not self.creating:
                continue
            if value is None or value == "" or value == [] or value == {}:
                continue
            data[name] = value
        return data

    def show_problems(self, problems: list[str]) -> None:
        """Show each validator message on the field its path names, the rest above the form."""
        prefix = self._path_in_file()
        for problem in problems:
            match = re.match(rf"{re.escape(prefix)}\.([A-Za-z_]+)", problem)
            field = match.group(1) if match else None
            self.add_error(field if field in self.fields else None, problem)

    def _path_in_file(self) -> str:
        """Where the written entry sits in the file, as the validator's messages name it."""
        resource = self.resource
        if not resource.is_list:
            return f"{resource.section}.{self.key or self.data.get(resource.key_field, '')}"
        names = list(resource.entries(self.config))
        index = names.index(self.key) if self.key in names else len(names)
        return f"{resource.section}[{index}]"

    @classmethod
    def initial_from(cls, item: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        initial = dict(item)
        if key is not None:
            initial.setdefault(cls.resource.key_field, key)
        return initial


class AgentForm(ResourceForm):
    resource = AGENTS
    choices_from: ClassVar = {"judges": ("judges",), "subagents": ("agents", "experiments")}

    name = forms.CharField(max_length=200)
    provider = forms.CharField()
    model = forms.CharField(help_text="The provider's model, e.g. gpt-4.1-mini.")
    preamble = _text(
        widget=forms.Textarea(attrs={"rows": 5}),
        strip=False,
        help_text="The system prompt this agent always starts with.",
    )
    purpose = _text(help_text="What the agent does; describes it when used as a subagent.")
    judges = NamesField(required=False)
    subagents = NamesField(required=False)
    mcp_tools = YamlField(
        expects=list,
        label="MCP tools",
        help_text="YAML list, e.g. “- server: docs” or “- {server: files, only: [read_file]}”.",
    )
    deployments = _upstreams("provider: openai-eu, model: gpt-4.1-mini, weight: 1")
    fallbacks = _upstreams("provider: anthropic, model: claude-haiku-4-5")


class JudgeForm(ResourceForm):
    resource = JUDGES

    name = forms.CharField(max_length=200)
    provider = forms.CharField()
    model = forms.CharField()
    sampling_rate = forms.FloatField(
        required=False, help_text="Share of replies judged, from 0 to 1 (default 1)."
    )
    rubrics = YamlField(
        expects=dict,
        help_text="YAML mapping of criterion to what to assess, e.g. “accuracy: Factual accuracy.”",
    )
    deployments = _upstreams("provider: openai-eu, model: gpt-4.1-mini, weight: 1")
    fallbacks = _upstreams("provider: anthropic, model: claude-haiku-4-5")


class ExperimentForm(ResourceForm):
    resource = EXPERIMENTS

    name = forms.CharField(max_length=200, help_text="What clients send as model.")
    strategy = forms.ChoiceField(choices=[(s, s) for s in ("split", "shadow", "bandit")])
    sticky_by_user = forms.BooleanField(required=False, initial=True)
    purpose = _text()
    variants = YamlField(
        expects=list,
        help_text="YAML list, e.g. “- {agent: assistant-a, weight: 0.5}”.",
    )
    primary = _text(help_text="shadow only: the variant that answers.")
    sampling_rate = forms.FloatField(required=False, help_text="shadow only (default 1).")
    metric = _text(help_text="bandit only: judge.criterion.")
    epsilon = forms.FloatField(required=False, help_text="bandit only (default 0.1).")
    min_samples = forms.IntegerField(required=False, help_text="bandit only (default 30).")
    bandit_window_seconds = forms.IntegerField(
        required=False, help_text="bandit only (default 604800)."
    )

    def body(self) -> dict[str, Any]:
        data = super().body()
        if data.get("sticky_by_user") is True:  # the default: left out of the file
            del data["sticky_by_user"]
        return data


class ProviderForm(ResourceForm):
    resource = PROVIDERS

    name = forms.CharField(
        max_length=64, help_text="How agents name it; a provider kind, or any name with a kind."
    )
    kind = forms.ChoiceField(
        required=False,
        choices=[("", "— the name —")] + [(kind, kind) for kind in KIND_NAMES],
        help_text="The wire format; leave it for a provider named after its kind.",
    )
    api_key = _text(
        label="API key",
        help_text="Shown masked; leave the masked value to keep the stored key. "
        "${NAME} reads an environment variable.",
    )
    base_url = _text(label="Base URL", help_text="Optional: overrides the public endpoint.")
    timeout = YamlField(
        expects=(dict, int, float),
        help_text="Seconds for the whole call, or a YAML mapping of connect, first_byte, idle, "
        "total (defaults 5, 60, 60, 600).",
    )
    retries = YamlField(
        expects=dict,
        help_text="YAML mapping of attempts, backoff, max_backoff, max_retry_after "
        "(defaults 2, 0.5, 8, 30).",
    )
    circuit = YamlField(
        expects=dict, help_text="YAML mapping of failures, cooldown (defaults 5, 30)."
    )
    billing = YamlField(
        expects=dict,
        help_text="openai and anthropic: YAML mapping of admin_key (shown masked; leave it "
        "to keep the stored key) and project, to compare what the provider billed.",
    )


class McpServerForm(ResourceForm):
    resource = MCP

    name = forms.CharField(max_length=200)
    transport = forms.ChoiceField(choices=[("stdio", "stdio"), ("http", "http"), ("sse", "sse")])
    command = _text(help_text="stdio: the program to start.")
    args = LinesField(help_text="stdio: one argument per line.")
    env = YamlField(expects=dict, help_text="stdio: YAML mapping, e.g. “ROOT: /srv”.")
    url = _text(label="URL", help_text="http: the server's endpoint.")


class ConfigForm(forms.Form):
    text = forms.CharField(
        strip=False,
        widget=forms.Textarea(attrs={"rows": 30, "class": "code", "spellcheck": "false"}),
    )

    def body(self) -> dict[str, Any]:
        return {"text": self.cleaned_data["text"]}

    def show_problems(self, problems: list[str]) -> None:
        for problem in problems:
            self.add_error(None, problem)


FORMS: dict[str, type[ResourceForm]] = {
    form.resource.section: form
    for form in (AgentForm, JudgeForm, ExperimentForm, ProviderForm, McpServerForm)
}


def _names(config: dict[str, Any], section: str) -> list[str]:
    value = config.get(section) or []
    if isinstance(value, dict):
        return [str(key) for key in value]
    return [str(item["name"]) for item in value if isinstance(item, dict) and "name" in item]
