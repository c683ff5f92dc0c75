"""Finding the skills under ``skills.dir``: each sub-folder with a ``SKILL.md``, whose YAML
front matter names the skill and says what it is for. As in Coulisse, the name defaults
to the folder's and the description to the body's first paragraph, so a bare SKILL.md
is a skill too.

Discovery runs with every load of the config (start, reload, admin write, check_config),
so a broken ``SKILL.md`` refuses the config like any other mistake in it, naming the
file, and a request never meets a skill the config could not read.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ruamel.yaml.error import YAMLError

from agents.yamldoc import describe_yaml_error, parse

SKILL_FILE = "SKILL.md"
DEFAULT_DIR = "./skills"  # read without a skills section, when it exists (Coulisse's default)
_FENCE = "---"
_NEEDS_FRONT_MATTER = "the front matter is not closed by a --- line, or is not a mapping"


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    folder: Path  # its folder under skills.dir (a symlink there is not resolved)
    body: str  # SKILL.md after the front matter: what the model reads when it loads it

    @property
    def source(self) -> str:
        """Its SKILL.md, relative to skills.dir (how problems name it)."""
        return f"{self.folder.name}/{SKILL_FILE}"


@dataclass(frozen=True)
class SkillCatalog:
    """The skills found, by name, and what was wrong with the folder (each problem starts
    with its path, like every config problem)."""

    skills: Mapping[str, Skill] = field(default_factory=dict)
    problems: tuple[str, ...] = ()


class _Unusable(Exception):
    """Why one SKILL.md defines no skill."""


def discover(root: Path) -> SkillCatalog:
    """The skills of the immediate sub-folders of ``root``; a sub-folder without a
    SKILL.md is not a skill (and no problem)."""
    root = root.resolve()
    if not root.is_dir():
        what = "is not a folder" if root.exists() else "does not exist"
        return SkillCatalog(problems=(f"skills.dir: folder '{root}' {what}",))
    try:
        folders = sorted(entry for entry in root.iterdir() if entry.is_dir())
    except OSError as error:
        return SkillCatalog(problems=(f"skills.dir: cannot read '{root}': {error.strerror}",))
    skills: dict[str, Skill] = {}
    problems: list[str] = []
    for folder in folders:
        if not (folder / SKILL_FILE).is_file():
            continue
        try:
            skill = _read(folder)
        except _Unusable as error:
            problems.append(f"skills: {folder.name}/{SKILL_FILE}: {error}")
            continue
        first = skills.setdefault(skill.name, skill)
        if first is not skill:
            problems.append(
                f"skills: {skill.source}: the name '{skill.name}' is taken by {first.source} "
                "too (skill names are unique)"
            )
    return SkillCatalog(skills, tuple(problems))


def _read(folder: Path) -> Skill:
    try:
        text = (folder / SKILL_FILE).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise _Unusable(f"not UTF-8 text (byte {error.start}): {error.reason}") from error
    except OSError as error:
        raise _Unusable(f"cannot be read: {error.strerror}") from error
    fields: object = {}
    body = text.removeprefix("\ufeff")
    parts = _front_matter(text)
    if parts is not None:
        front, body = parts
        try:
            fields = parse("\n" + front)  # after the opening line: errors name the file's lines
        except YAMLError as error:
            raise _Unusable(
                f"the front matter is not valid YAML: {describe_yaml_error(error)}"
            ) from error
    elif body.startswith(_FENCE):
        raise _Unusable(_NEEDS_FRONT_MATTER)
    if not isinstance(fields, dict):
        raise _Unusable(_NEEDS_FRONT_MATTER)
    blank = [key for key in ("name", "description") if key in fields and not _text(fields[key])]
    if blank:
        raise _Unusable(f"the front matter's {' and '.join(blank)} must be non-blank text")
    description = fields.get("description") or _first_paragraph(body)
    if not description:
        raise _Unusable("needs a description: in the front matter, or a first paragraph")
    return Skill((fields.get("name") or folder.name).strip(), description.strip(), folder, body)


def _first_paragraph(body: str) -> str:
    """The body's first paragraph that is not a heading, on one line ("" if none)."""
    paragraph: list[str] = []
    for line in body.splitlines():
        text = line.strip()
        if not text or text.startswith("#"):
            if paragraph:
                break
            continue
        paragraph.append(text)
    return " ".join(paragraph)


def _front_matter(text: str) -> tuple[str, str] | None:
    """(front matter, body) of a file that opens with a ``---`` line and has another
    one to close the front matter; None otherwise."""
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].rstrip() != _FENCE:
        return None
    for index, line in enumerate(lines[1:], start=1):
        if line.rstrip() == _FENCE:
            return "".join(lines[1:index]), "".join(lines[index + 1 :]).lstrip("\r\n")
    return None


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())
