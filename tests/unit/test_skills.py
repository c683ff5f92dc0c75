"""Skills in the config (docs/skills.md): every SKILL.md under skills.dir is checked with
each load and a broken one refuses the config naming its file, while a bare one is named
after its folder and described by its first paragraph (as in Coulisse); ./skills is read
without a skills section; a skill an agent lists that does not exist is warned; a
skill's files are read only inside its folder; a forced reload applies a changed
SKILL.md although the config's text did not change."""

from pathlib import Path
from typing import Any

import pytest

from agents.loader import ConfigError, load_config_data
from agents.skills.reading import MAX_FILE_BYTES, SkillFileError, files_of, read_text
from agents.snapshot import ConfigHolder

PDF = "---\nname: pdf-forms\ndescription: Fill in PDF forms.\n---\n\n# PDF forms\nRead labels.\n"


def config_data(skills: list[str] | None = None, section: bool = True) -> dict[str, Any]:
    data: dict[str, Any] = {
        "providers": {"openai": {"api_key": "sk-1"}},
        "agents": [
            {"name": "plain", "provider": "openai", "model": "gpt"},
            {"name": "skilled", "provider": "openai", "model": "gpt", "skills": skills or []},
        ],
    }
    if section:
        data["skills"] = {"dir": "skills"}
    return data


def write_skill(base: Path, folder: str, text: str) -> Path:
    path = base / "skills" / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def problems(data: dict[str, Any], base: Path) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        load_config_data(data, base=base)
    return raised.value.problems


def test_skills_are_found_relative_to_the_config_folder(tmp_path: Path) -> None:
    write_skill(tmp_path, "pdf", PDF)
    write_skill(tmp_path, "notes", "---\nname: notes\ndescription: '  Notes.  '\n---\nBody.\n")
    (tmp_path / "skills" / "no-skill-here").mkdir()  # a folder without SKILL.md is no skill

    config = load_config_data(config_data(["pdf-forms", "notes"]), base=tmp_path)

    assert sorted(config.skill_catalog.skills) == ["notes", "pdf-forms"]
    skill = config.skill("pdf-forms")
    assert skill is not None
    assert (skill.description, skill.body) == ("Fill in PDF forms.", "# PDF forms\nRead labels.\n")
    assert skill.folder == (tmp_path / "skills" / "pdf").resolve()
    assert config.skill("notes") is not None and config.skill("notes").description == "Notes."
    assert config.skill("ghost") is None


def test_a_missing_skills_dir_is_refused_with_its_resolved_path(tmp_path: Path) -> None:
    assert problems(config_data(), tmp_path) == [
        f"skills.dir: folder '{tmp_path.resolve() / 'skills'}' does not exist"
    ]


def test_a_skills_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "skills").write_text("not a folder")

    assert problems(config_data(), tmp_path) == [
        f"skills.dir: folder '{tmp_path.resolve() / 'skills'}' is not a folder"
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("---\nname: pdf-forms\ndescription: never closed\n", "is not closed by a --- line"),
        ("---\n- a list\n---\nBody.\n", "or is not a mapping"),
        (
            "---\nname: pdf\ndescription: '  '\n---\n",
            "front matter's description must be non-blank",
        ),
        ("---\nname: ''\n---\nBody.\n", "the front matter's name must be non-blank text"),
        ("---\nname: pdf\n---\n# Only a heading\n", "needs a description: in the front matter"),
        ("---\nname: [a\n---\n", "the front matter is not valid YAML: line 3, column 1"),
        ("---\nname: a b\ndescription: Fills.\n---\n", "'a b' is not a valid name"),
    ],
)
def test_a_broken_skill_md_refuses_the_config_naming_its_file(
    tmp_path: Path, text: str, problem: str
) -> None:
    write_skill(tmp_path, "pdf", text)

    (found,) = problems(config_data(), tmp_path)  # listed by no agent: checked all the same

    assert found.startswith("skills: pdf/SKILL.md: ")
    assert problem in found


@pytest.mark.parametrize(
    ("text", "name", "description"),
    [
        (
            "# PDF forms\n\nFills PDF forms\nfrom a table.\n\nMore.\n",
            "pdf",
            "Fills PDF forms from a table.",
        ),
        ("---\nname: pdf-forms\n---\nBody first.\n", "pdf-forms", "Body first."),
        ("---\ndescription: Fills.\n---\n", "pdf", "Fills."),
    ],
)
def test_a_skill_md_without_name_or_description_takes_its_folder_and_first_paragraph(
    tmp_path: Path, text: str, name: str, description: str
) -> None:
    write_skill(tmp_path, "pdf", text)

    config = load_config_data(config_data([name]), base=tmp_path)

    skill = config.skill(name)
    assert skill is not None and skill.description == description
    assert config.warnings == ()


def test_a_skill_md_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    write_skill(tmp_path, "pdf", PDF).write_bytes(b"---\nname: \xff\n---\n")

    assert problems(config_data(), tmp_path) == [
        "skills: pdf/SKILL.md: not UTF-8 text (byte 10): invalid start byte"
    ]


def test_two_skills_with_one_name_are_refused_naming_both_files(tmp_path: Path) -> None:
    write_skill(tmp_path, "a-pdf", PDF)
    write_skill(tmp_path, "b-pdf", PDF)

    assert problems(config_data(["pdf-forms"]), tmp_path) == [
        "skills: b-pdf/SKILL.md: the name 'pdf-forms' is taken by a-pdf/SKILL.md too "
        "(skill names are unique)"
    ]


def test_an_agent_listing_an_unknown_skill_is_warned_and_one_listed_twice_refused(
    tmp_path: Path,
) -> None:
    write_skill(tmp_path, "pdf", PDF)

    config = load_config_data(config_data(["pdf-forms", "ghost"]), base=tmp_path)

    assert [str(warning) for warning in config.warnings] == [
        "agents[1].skills[1]: skill 'ghost' is not defined (no SKILL.md under skills.dir "
        "names it): the agent goes without it"
    ]
    assert problems(config_data(["pdf-forms", "pdf-forms"]), tmp_path) == [
        "agents[1].skills[1]: 'pdf-forms' is listed twice"
    ]


def test_without_a_skills_section_the_skills_folder_is_read_if_it_exists(tmp_path: Path) -> None:
    missing = load_config_data(config_data(["pdf-forms"], section=False), base=tmp_path)
    assert missing.skill_catalog.skills == {}
    assert [warning.path for warning in missing.warnings] == ["agents[1].skills[0]"]
    assert "under ./skills" in missing.warnings[0].message

    write_skill(tmp_path, "pdf", PDF)
    found = load_config_data(config_data(["pdf-forms"], section=False), base=tmp_path)
    assert found.skill("pdf-forms") is not None and found.warnings == ()


def test_skill_problems_are_reported_beside_type_errors(tmp_path: Path) -> None:
    data = config_data(["ghost"])
    data["agents"][0]["judges"] = "not a list"

    assert problems(data, tmp_path) == [
        "agents[0].judges: input should be a valid list",
        f"skills.dir: folder '{tmp_path.resolve() / 'skills'}' does not exist",
    ]


def test_a_skills_section_without_dir_is_one_problem_not_an_echo_per_agent(
    tmp_path: Path,
) -> None:
    data = config_data(["pdf-forms"])
    data["skills"] = {}

    assert problems(data, tmp_path) == ["skills.dir: field required"]


@pytest.fixture
def skill_folder(tmp_path: Path) -> Path:
    write_skill(tmp_path, "pdf", PDF)
    folder = tmp_path / "skills" / "pdf"
    (folder / "docs").mkdir()
    (folder / "docs" / "fields.md").write_text("Fields.\n")
    (folder / "reference.md").write_text("Reference.\n")
    (tmp_path / "secret.txt").write_text("Secret.\n")
    (folder / "leak.md").symlink_to(tmp_path / "secret.txt")
    (folder / "alias.md").symlink_to(folder / "reference.md")
    return folder


def loaded_skill(base: Path) -> Any:
    return load_config_data(config_data(["pdf-forms"]), base=base).skill("pdf-forms")


def test_a_skill_lists_its_files_inside_its_folder(tmp_path: Path, skill_folder: Path) -> None:
    assert files_of(loaded_skill(tmp_path)) == ["alias.md", "docs/fields.md", "reference.md"]


def test_a_skill_reads_its_own_files(tmp_path: Path, skill_folder: Path) -> None:
    skill = loaded_skill(tmp_path)

    assert read_text(skill, "docs/fields.md") == "Fields.\n"
    assert read_text(skill, "docs/../reference.md") == "Reference.\n"
    assert read_text(skill, "alias.md") == "Reference.\n"  # a symlink that stays inside


def refusal(skill: Any, path: str) -> str:
    with pytest.raises(SkillFileError) as raised:
        read_text(skill, path)
    return str(raised.value)


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("../../secret.txt", "'../../secret.txt' is outside the folder of skill 'pdf-forms'"),
        ("leak.md", "'leak.md' is outside the folder of skill 'pdf-forms'"),
        (
            "/etc/hostname",
            "'/etc/hostname' is an absolute path: give a path relative to the skill's folder",
        ),
        ("docs", "skill 'pdf-forms' has no file 'docs' (load_skill lists its files)"),
        ("nothing.md", "skill 'pdf-forms' has no file 'nothing.md' (load_skill lists its files)"),
        ("", "path is empty: give a file's path relative to the skill's folder"),
    ],
)
def test_a_skill_reads_nothing_outside_its_folder(
    tmp_path: Path, skill_folder: Path, path: str, error: str
) -> None:
    assert refusal(loaded_skill(tmp_path), path) == error


def test_a_skill_reads_no_large_or_binary_file(tmp_path: Path, skill_folder: Path) -> None:
    (skill_folder / "big.md").write_text("x" * (MAX_FILE_BYTES + 1))
    (skill_folder / "edge.md").write_text("x" * MAX_FILE_BYTES)
    (skill_folder / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff")
    skill = loaded_skill(tmp_path)

    assert refusal(skill, "big.md") == "'big.md' is larger than 256 KiB"
    assert len(read_text(skill, "edge.md")) == MAX_FILE_BYTES
    assert refusal(skill, "image.png") == "'image.png' is not UTF-8 text"


def test_a_forced_reload_applies_a_changed_skill_md_only(tmp_path: Path) -> None:
    skill_md = write_skill(tmp_path, "pdf", PDF)
    path = tmp_path / "gateway.yaml"
    path.write_text(
        "providers: {openai: {api_key: sk-1}}\nskills: {dir: skills}\n"
        "agents: [{name: skilled, provider: openai, model: gpt, skills: [pdf-forms]}]\n"
    )
    holder = ConfigHolder(path)
    assert holder.reload()
    first = holder.snapshot

    assert not holder.reload(force=True)  # nothing changed: no new snapshot
    skill_md.write_text(PDF.replace("Fill in PDF forms.", "Fill in forms."))
    assert not holder.reload()  # the text of the config did not change
    assert holder.snapshot is first

    assert holder.reload(force=True)
    assert holder.config is not None
    assert holder.config.skill("pdf-forms").description == "Fill in forms."

    skill_md.write_text("---\nname: pdf-forms\ndescription: never closed\n")
    assert not holder.reload(force=True)
    assert holder.problems == [
        "skills: pdf/SKILL.md: the front matter is not closed by a --- line, or is not a mapping"
    ]
    assert holder.config.skill("pdf-forms").description == "Fill in forms."  # still serving
