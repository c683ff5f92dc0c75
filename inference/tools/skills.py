"""The agent's skills as its model sees them (docs/skills.md): one line each in the
system prompt, and two tools, ``load_skill`` (a skill's instructions and the list of its
other files) and ``read_skill_file`` (one of those files).

Only names and descriptions are in every prompt: a skill's body and files cost tokens
only in the conversations whose model asks for them. Whatever goes wrong (a skill the
agent does not list, a path out of its folder, a missing, large or binary file) is the
tool's error, told to the model.
"""

import asyncio
from collections.abc import Sequence
from typing import Any

from agents.schema import AgentConfig, Config
from agents.skills.catalog import Skill
from agents.skills.reading import SkillFileError, files_of, read_text
from inference.neutral.types import ToolSpec
from inference.tools.failure import ToolFailed

LOAD_SKILL = "load_skill"
READ_SKILL_FILE = "read_skill_file"
HEADING = "You have these skills; call load_skill with a skill's name before a task it covers:"


def skills_prompt(agent: AgentConfig, config: Config) -> str:
    """The lines of the system prompt that list ``agent``'s skills ("" without any)."""
    skills = [skill for name in agent.skills if (skill := config.skill(name)) is not None]
    if not skills:
        return ""
    lines = (f"- {skill.name} — {' '.join(skill.description.split())}" for skill in skills)
    return "\n".join((HEADING, *lines))


def skill_specs(names: Sequence[str]) -> tuple[ToolSpec, ...]:
    """The two tools of an agent that lists the skills ``names`` (none without skills)."""
    if not names:
        return ()
    name = {"type": "string", "enum": list(names), "description": "The skill's name."}
    path = {
        "type": "string",
        "description": "The file's path in the skill's folder, as load_skill lists it.",
    }
    return (
        ToolSpec(
            LOAD_SKILL,
            "Load a skill: its instructions, and the list of the other files of its folder.",
            {"type": "object", "properties": {"name": name}, "required": ["name"]},
        ),
        ToolSpec(
            READ_SKILL_FILE,
            "Read one of the other files of a skill's folder.",
            {
                "type": "object",
                "properties": {"name": name, "path": path},
                "required": ["name", "path"],
            },
        ),
    )


async def run_skill_tool(
    tool: str, listed: Sequence[str], config: Config, arguments: dict[str, Any]
) -> str:
    """The answer of ``tool`` for an agent that lists the skills ``listed``; the files
    are read off the event loop."""
    skill = _skill(listed, config, arguments.get("name"))
    try:
        if tool == LOAD_SKILL:
            return _loaded(skill, await asyncio.to_thread(files_of, skill))
        path = arguments.get("path")
        if not isinstance(path, str):
            raise ToolFailed(f'{READ_SKILL_FILE} takes {{"name": "<skill>", "path": "<file>"}}')
        return await asyncio.to_thread(read_text, skill, path)
    except SkillFileError as error:
        raise ToolFailed(str(error)) from error


def _skill(listed: Sequence[str], config: Config, name: Any) -> Skill:
    if not isinstance(name, str) or name not in listed:
        offered = ", ".join(listed)
        raise ToolFailed(f"there is no skill {name!r} here (the skills: {offered})")
    skill = config.skill(name)
    if skill is None:
        raise ToolFailed(f"skill '{name}' is not configured any more")
    return skill


def _loaded(skill: Skill, files: list[str]) -> str:
    if not files:
        return f"{skill.body.rstrip()}\n\n(The skill's folder holds no other file.)"
    return (
        f"{skill.body.rstrip()}\n\nOther files of the skill's folder (read them with "
        f"{READ_SKILL_FILE}): {', '.join(files)}"
    )
