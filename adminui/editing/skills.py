"""The skills of the live config (docs/skills.md): ``/admin/skills`` and one skill's page.

Read-only: a skill is a folder of files under ``skills.dir``, edited on disk, and the
gateway reloads when one changes. The pages show what agents' models get: the name and
description in their prompts, the instructions ``load_skill`` answers, the files
``read_skill_file`` reads.
"""

from typing import Any

from ninja import Router
from pydantic import BaseModel

from adminui.context import AdminRequest
from adminui.rendering.errors import AdminError
from adminui.rendering.negotiation import respond
from adminui.schemas import errors
from agents.schema import Config
from agents.skills.catalog import Skill
from agents.skills.reading import SkillFileError, files_of

router = Router(tags=["skills"])


class SkillOut(BaseModel):
    name: str
    description: str
    folder: str  # its folder under skills.dir
    agents: list[str]  # the agents that list it
    files: list[str]  # the folder's other files, relative to it
    body: str  # SKILL.md after the front matter: what load_skill answers


@router.get(
    "/skills",
    response={200: list[SkillOut], **errors()},
    operation_id="list_skills",
    url_name="skills",
    summary="The skills found under skills.dir, by name",
)
def list_skills(request: AdminRequest) -> Any:
    config = request.runtime.holder.config
    data = []
    if config is not None:
        skills = sorted(config.skill_catalog.skills.values(), key=lambda skill: skill.name)
        data = [_described(config, skill) for skill in skills]
    return respond(request, data, "adminui/skills.html", skills=data)


@router.get(
    "/skills/{name}",
    response={200: SkillOut, **errors(404)},
    operation_id="read_skill",
    url_name="skill",
    summary="One skill: its description, instructions, files and the agents that list it",
)
def read_skill(request: AdminRequest, name: str) -> Any:
    config = request.runtime.holder.config
    skill = config.skill(name) if config is not None else None
    if config is None or skill is None:
        raise AdminError(404, f"skill '{name}' is not defined", "not_found")
    data = _described(config, skill)
    return respond(request, data, "adminui/skill.html", skill=data)


def _described(config: Config, skill: Skill) -> dict[str, Any]:
    try:
        files = files_of(skill)
    except SkillFileError:
        files = []  # the folder went away since the config was loaded
    return {
        "name": skill.name,
        "description": skill.description,
        "folder": skill.folder.name,
        "agents": [agent.name for agent in config.agents if skill.name in agent.skills],
        "files": files,
        "body": skill.body,
    }
