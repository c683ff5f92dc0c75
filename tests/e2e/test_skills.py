"""Skills through the real server: the prompt lists an agent's skills and nothing more;
the model loads one with ``load_skill`` and reads its other files with
``read_skill_file``, never a file outside the skill's folder; an edit of a SKILL.md, and a
move of skills.dir, apply without a restart; the admin shows the skills, as JSON and as
pages, and refuses a write that lists a skill nobody defined."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.browser import chromium_page, shot
from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.polling import wait_for
from tests.server import GatewayServer
from tests.upstreams import fake_base_url

JSON = {"Accept": "application/json"}
PDF_BODY = "# Filling PDF forms\n\nRead every field's label before writing its value.\n"
NOTES_BODY = "# Release notes\n\nGroup the changes as Added, Changed and Fixed.\n"
REFERENCE = "Field names are case-sensitive.\n"


def skill_md(name: str, description: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}"


def config(fake: FakeUpstream) -> str:
    return f"""\
providers:
  openai: {{api_key: sk-test, base_url: '{fake_base_url(fake)}', retries: {{attempts: 0}}}}
skills:
  dir: ./skills
agents:
  - name: skilled
    provider: openai
    model: gpt-skilled
    preamble: You are Skilled.
    history: false
    skills: [pdf-forms, release-notes]
"""


def write_skills(workdir: Path) -> None:
    """Three skills (one listed by no agent), the first with more files, one of them a
    symlink to a file outside the skills folder."""
    pdf = workdir / "skills" / "pdf"
    (pdf / "scripts").mkdir(parents=True)
    (pdf / "SKILL.md").write_text(skill_md("pdf-forms", "Fill in PDF forms.", PDF_BODY))
    (pdf / "reference.md").write_text(REFERENCE)
    (pdf / "scripts" / "fill.py").write_text("print('filled')\n")
    (workdir / "secret.txt").write_text("not for the model\n")
    (pdf / "outside.md").symlink_to(workdir / "secret.txt")
    notes = workdir / "skills" / "notes"
    notes.mkdir()
    (notes / "SKILL.md").write_text(
        skill_md("release-notes", "Write release notes from a changelog.", NOTES_BODY)
    )
    hidden = workdir / "skills" / "hidden"
    hidden.mkdir()
    (hidden / "SKILL.md").write_text(skill_md("hidden", "Listed by no agent.", "Secret.\n"))


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    workdir = tmp_path_factory.mktemp("skills")
    write_skills(workdir)
    gateway = GatewayServer(workdir, config(upstreams["openai"]))
    gateway.start()
    yield gateway
    gateway.stop()


@pytest.fixture
def fake(fakes: dict[str, FakeUpstream]) -> FakeUpstream:
    return fakes["openai"]


def ask(server: GatewayServer) -> openai.types.chat.ChatCompletion:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0)
    return client.chat.completions.create(
        model="skilled", messages=[{"role": "user", "content": "Help me."}], user="skills-user"
    )


def system_of(recorded: Recorded) -> str:
    return "\n\n".join(m["content"] for m in recorded.body["messages"] if m["role"] == "system")


def tool_result(recorded: Recorded) -> str:
    (message,) = [m for m in recorded.body["messages"] if m["role"] == "tool"]
    return message["content"]


def prompt_now(server: GatewayServer, fake: FakeUpstream) -> str:
    """The system prompt of a request made now."""
    ask(server)
    return system_of(fake.last)


def run_tool(server: GatewayServer, fake: FakeUpstream, name: str, arguments: Any) -> str:
    """The result of one call of an own tool the model makes, as the next upstream call
    carries it; the client's request succeeds whatever the tool answered."""
    fake.script(Reply.of_tool_calls((name, arguments)), Reply.of_text("Done."))
    completion = ask(server)
    assert completion.choices[0].message.content == "Done."
    first, second = fake.requests
    assert not [m for m in first.body["messages"] if m["role"] == "tool"]
    return tool_result(second)


def test_the_prompt_lists_the_skills_but_not_their_bodies(
    server: GatewayServer, fake: FakeUpstream
) -> None:
    system = prompt_now(server, fake)

    assert system == (
        "You are Skilled.\n\n"
        "You have these skills; call load_skill with a skill's name before a task it covers:\n"
        "- pdf-forms — Fill in PDF forms.\n"
        "- release-notes — Write release notes from a changelog."
    )
    sent = json.dumps(fake.last.body)
    assert "Filling PDF forms" not in sent and "Group the changes" not in sent
    tools = {tool["function"]["name"]: tool["function"] for tool in fake.last.body["tools"]}
    assert set(tools) == {"load_skill", "read_skill_file"}
    enum = tools["load_skill"]["parameters"]["properties"]["name"]["enum"]
    assert enum == ["pdf-forms", "release-notes"]


def test_load_skill_answers_the_body_and_the_other_files_to_the_next_call(
    server: GatewayServer, fake: FakeUpstream
) -> None:
    result = run_tool(server, fake, "load_skill", {"name": "pdf-forms"})

    assert result.startswith(PDF_BODY.rstrip())
    assert "name: pdf-forms" not in result  # the front matter stays out
    assert result.endswith("(read them with read_skill_file): reference.md, scripts/fill.py")


def test_read_skill_file_answers_the_file(server: GatewayServer, fake: FakeUpstream) -> None:
    arguments = {"name": "pdf-forms", "path": "reference.md"}

    assert run_tool(server, fake, "read_skill_file", arguments) == REFERENCE


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"name": "pdf-forms", "path": "../notes/SKILL.md"}, "is outside the folder"),
        ({"name": "pdf-forms", "path": "scripts/../../notes/SKILL.md"}, "is outside the folder"),
        ({"name": "pdf-forms", "path": "/etc/hostname"}, "is an absolute path"),
        ({"name": "pdf-forms", "path": "outside.md"}, "is outside the folder"),
        ({"name": "pdf-forms", "path": "missing.md"}, "has no file 'missing.md'"),
        ({"name": "hidden", "path": "SKILL.md"}, "there is no skill 'hidden'"),
    ],
)
def test_what_the_model_may_not_read_is_a_tool_error(
    server: GatewayServer, fake: FakeUpstream, arguments: dict[str, str], error: str
) -> None:
    result = run_tool(server, fake, "read_skill_file", arguments)

    assert result.startswith("Error: ") and error in result
    assert "not for the model" not in result and "Secret." not in result


def test_the_admin_lists_the_skills_and_shows_one_as_json(server: GatewayServer) -> None:
    with httpx.Client(base_url=f"{server.url}/admin", headers=JSON, timeout=10) as admin:
        listed = admin.get("/skills")
        one = admin.get("/skills/pdf-forms")
        missing = admin.get("/skills/ghost")

    assert listed.status_code == 200
    assert [(s["name"], s["description"], s["agents"]) for s in listed.json()] == [
        ("hidden", "Listed by no agent.", []),
        ("pdf-forms", "Fill in PDF forms.", ["skilled"]),
        ("release-notes", "Write release notes from a changelog.", ["skilled"]),
    ]
    assert one.status_code == 200
    assert one.json() == {
        "name": "pdf-forms",
        "description": "Fill in PDF forms.",
        "folder": "pdf",
        "agents": ["skilled"],
        "files": ["reference.md", "scripts/fill.py"],
        "body": PDF_BODY,
    }
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    assert missing.json()["error"]["message"] == "skill 'ghost' is not defined"


def test_an_admin_write_that_lists_an_undefined_skill_is_kept_and_warned(
    server: GatewayServer,
) -> None:
    """As in Coulisse, an unknown skill is warned, not refused: the agent goes without it."""
    with httpx.Client(base_url=f"{server.url}/admin", headers=JSON, timeout=10) as admin:
        agent = admin.get("/agents/skilled").json()
        response = admin.put("/agents/skilled", json={**agent, "skills": ["pdf-forms", "ghost"]})
        try:
            assert response.status_code == 200, response.text
            assert "ghost" in server.config_path.read_text()
            warned = [line for line in server.log().splitlines() if '"config_warning"' in line]
            assert any("agents[0].skills[1]" in line and "'ghost'" in line for line in warned)
        finally:
            assert admin.put("/agents/skilled", json=agent).status_code == 200


@pytest.mark.browser
def test_the_admin_skills_pages_in_a_browser(server: GatewayServer) -> None:
    with chromium_page() as page:
        page.goto(f"{server.url}/admin/skills")
        row = page.locator("table.skills tbody tr", has_text="pdf-forms")
        assert "Fill in PDF forms." in row.inner_text()
        assert page.locator("nav a[aria-current=page]").inner_text() == "Skills"
        shot(page, "skills")
        row.get_by_role("link", name="pdf-forms").click()
        page.wait_for_url("**/admin/skills/pdf-forms")
        assert page.locator("h1").inner_text() == "pdf-forms"
        assert "Read every field's label" in page.locator("pre.skill-body").inner_text()
        assert "scripts/fill.py" in page.locator("dl.fields").inner_text()
        shot(page, "skill")


def edit_and_wait(server: GatewayServer, fake: FakeUpstream, file: Path, text: str) -> None:
    """Write ``file`` and wait until a request's prompt shows the description it gives."""
    description = text.split("description: ")[1].splitlines()[0]
    file.write_text(text)
    wait_for(lambda: description in prompt_now(server, fake), description)


def test_an_edited_skill_md_reaches_the_next_request(
    server: GatewayServer, fake: FakeUpstream
) -> None:
    notes = server.workdir / "skills" / "notes" / "SKILL.md"
    original = notes.read_text()
    try:
        edit_and_wait(
            server, fake, notes, skill_md("release-notes", "Write terse release notes.", "New.\n")
        )
        assert "- release-notes — Write terse release notes." in system_of(fake.last)
    finally:
        edit_and_wait(server, fake, notes, original)


def test_a_moved_skills_dir_is_watched_from_then_on(
    server: GatewayServer, fake: FakeUpstream
) -> None:
    moved = server.workdir / "other-skills"
    (moved / "pdf").mkdir(parents=True)
    (moved / "notes").mkdir()
    (moved / "pdf" / "SKILL.md").write_text(skill_md("pdf-forms", "Moved PDF forms.", "B.\n"))
    (moved / "notes" / "SKILL.md").write_text(skill_md("release-notes", "Moved notes.", "C.\n"))
    original = server.config_path.read_text()
    try:
        server.config_path.write_text(original.replace("dir: ./skills", "dir: ./other-skills"))
        wait_for(lambda: "Moved PDF forms." in prompt_now(server, fake), "the move")

        # Twice: the first edit may still be seen by the reload a watch makes as it
        # starts; the second, made once the first applied, only by a watch of the folder.
        for description in ("Edited after the move.", "Edited once more."):
            notes = skill_md("release-notes", description, "D.\n")
            edit_and_wait(server, fake, moved / "notes" / "SKILL.md", notes)
    finally:
        server.config_path.write_text(original)
        wait_for(lambda: "Fill in PDF forms." in prompt_now(server, fake), "restore")
