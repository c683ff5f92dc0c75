"""The files of a skill's folder, as the model and the admin see them.

A skill's folder may hold more than its SKILL.md (references, templates, scripts), and
the model asks for them by path. Nothing outside the folder is ever read: not through
``..``, an absolute path, or a symlink that leads out (paths are resolved and checked),
and only UTF-8 text up to ``MAX_FILE_BYTES``.
"""

import os
from pathlib import Path, PurePosixPath

from agents.skills.catalog import SKILL_FILE, Skill

MAX_FILE_BYTES = 256 * 1024


class SkillFileError(Exception):
    """Why a file of a skill cannot be listed or read (the model gets it as the tool's
    error)."""


def files_of(skill: Skill) -> list[str]:
    """The folder's files besides its SKILL.md, as paths relative to it, sorted; a
    symlink that leads out of the folder is left out, and symlinked folders are not
    entered."""
    root = _root(skill)
    found = []
    try:
        for parent, _folders, names in os.walk(root):
            for name in names:
                path = Path(parent, name)
                relative = path.relative_to(root).as_posix()
                if relative != SKILL_FILE and path.resolve().is_relative_to(root):
                    found.append(relative)
    except OSError as error:
        raise SkillFileError(f"the folder of skill '{skill.name}' cannot be read") from error
    return sorted(found)


def read_text(skill: Skill, path: str) -> str:
    """The text of ``path``, relative to the skill's folder."""
    if not path.strip():
        raise SkillFileError("path is empty: give a file's path relative to the skill's folder")
    if PurePosixPath(path).is_absolute() or Path(path).is_absolute():
        raise SkillFileError(
            f"'{path}' is an absolute path: give a path relative to the skill's folder"
        )
    root = _root(skill)
    try:
        target = (root / path).resolve()
    except (OSError, ValueError) as error:
        raise SkillFileError(f"'{path}' is not a usable path") from error
    if not target.is_relative_to(root):
        raise SkillFileError(f"'{path}' is outside the folder of skill '{skill.name}'")
    if not target.is_file():
        raise SkillFileError(
            f"skill '{skill.name}' has no file '{path}' (load_skill lists its files)"
        )
    try:
        with target.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise SkillFileError(f"'{path}' cannot be read: {error.strerror}") from error
    if len(data) > MAX_FILE_BYTES:
        raise SkillFileError(f"'{path}' is larger than {MAX_FILE_BYTES // 1024} KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SkillFileError(f"'{path}' is not UTF-8 text") from error


def _root(skill: Skill) -> Path:
    return skill.folder.resolve()
