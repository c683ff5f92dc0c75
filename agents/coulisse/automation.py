"""Coulisse's triggers (``{type, schedule, path, prompt}``) and smoke tests (``{target,
persona: {provider, model, preamble}, initial_message, max_turns}``) as the gateway's."""

import re
from typing import Any

from agents.coulisse.data import entries, mapping
from agents.schema import ConfigWarning

# A Coulisse prompt reads a webhook payload's top-level fields as {{field}}.
_PAYLOAD_FIELD = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)")
_TRIGGER_TYPES = ("cron", "boot", "webhook")
_SMOKE_MAX_TURNS = 10  # Coulisse's default


def triggers(data: dict[str, Any], problems: list[str], warnings: list[ConfigWarning]) -> None:
    """``{type: cron|boot|webhook, schedule, path, prompt}``: a schedule, on_start, a
    webhook; the prompt is the message, the user the default one."""
    default_user = data.get("default_user_id")
    guarded = mapping(data.get("auth")).get("proxy") is not None
    for index, trigger in entries(data.get("triggers")):
        kind = trigger.get("type")
        if kind is None:
            continue
        where = f"triggers[{index}]"
        name = trigger.get("name")
        if kind not in _TRIGGER_TYPES:
            problems.append(
                f"{where}.type: must be one of {', '.join(_TRIGGER_TYPES)}, got {kind!r}"
            )
        elif kind == "boot":
            trigger.setdefault("on_start", True)
        elif kind == "webhook":
            trigger.setdefault("webhook", {"secret": trigger.get("secret", "")})
            trigger.setdefault("path", f"/hooks/{name}")
            if not guarded and not mapping(trigger["webhook"]).get("secret"):
                warnings.append(
                    ConfigWarning(f"{where}.path", "anyone may call this webhook (no secret, "
                                  "no auth.proxy), as in Coulisse")
                )  # fmt: skip
        if "message" not in trigger and isinstance(trigger.get("prompt"), str):
            trigger["message"] = _PAYLOAD_FIELD.sub(r"{{ body.\1", trigger["prompt"])
        if "user" not in trigger:
            trigger["user"] = default_user if isinstance(default_user, str) else f"trigger:{name}"


def smoke_tests(data: dict[str, Any]) -> None:
    """``{target, persona: {provider, model, preamble}, initial_message, max_turns}``:
    the agent (or experiment) tested, an inline persona, the opening, the exchanges; the
    judges are the target's."""
    for _, test in entries(data.get("smoke_tests")):
        if "target" not in test and not isinstance(test.get("persona"), dict):
            continue
        if "target" in test:
            test.setdefault("agent", test["target"])
        if "initial_message" in test:
            test.setdefault("opening", test["initial_message"])
        test.setdefault("turns", test.get("max_turns", _SMOKE_MAX_TURNS))
        test.setdefault("judges", _judges_of(data, test.get("agent")))


def _judges_of(data: dict[str, Any], name: Any) -> list[str]:
    """The judges of agent ``name``, or of every variant of experiment ``name``."""
    agents = {agent.get("name"): agent for _, agent in entries(data.get("agents"))}
    experiment = next(
        (item for _, item in entries(data.get("experiments")) if item.get("name") == name), None
    )
    names = (
        [name]
        if experiment is None
        else [v.get("agent") for _, v in entries(experiment.get("variants"))]
    )
    judges: list[str] = []
    for agent_name in names:
        for judge in mapping(agents.get(agent_name)).get("judges") or []:
            if judge not in judges:
                judges.append(judge)
    return judges
