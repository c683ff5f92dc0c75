"""A newcomer's journey in a real browser: create an agent, see it, edit it, delete it.

Headless Debian Chromium driven by Playwright (no browser download); screenshots go to
test-artifacts/ at the repo root.
"""

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser import chromium_page, shot
from tests.server import GatewayServer

CONFIG = """\
# The team's gateway.
providers:
  openai: {api_key: sk-browser-secret-0123456789}
judges:
  - name: quality
    provider: openai
    model: gpt-4.1-mini
    rubrics: {accuracy: Factual accuracy.}
agents:
  - name: support
    provider: openai
    model: gpt-4.1-mini
    preamble: You are the support agent of ACME.
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    gateway = GatewayServer(tmp_path_factory.mktemp("browser"), CONFIG).start()
    yield gateway
    gateway.stop()


@pytest.fixture
def page() -> Iterator[Page]:
    with chromium_page() as page:
        yield page


def model_ids(server: GatewayServer) -> list[str]:
    return [model["id"] for model in httpx.get(f"{server.url}/v1/models").json()["data"]]


def test_newcomer_creates_lists_edits_and_deletes_an_agent(
    page: Page, server: GatewayServer
) -> None:
    page.goto(f"{server.url}/admin")
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    shot(page, "overview")

    page.get_by_role("link", name="New agent").click()
    page.get_by_label("Name").fill("helper")
    page.get_by_label("Provider").select_option("openai")
    page.get_by_label("Model").fill("gpt-4.1-mini")
    page.get_by_label("Preamble").fill("You help with orders.")
    page.get_by_label("quality").check()
    shot(page, "new-agent-form")
    page.get_by_role("button", name="Create agent").click()

    page.wait_for_url("**/admin/agents/helper")
    expect(page.get_by_role("heading", name="helper")).to_be_visible()
    expect(page.locator("dl.fields")).to_contain_text("You help with orders.")
    assert "helper" in model_ids(server)

    page.get_by_role("navigation").get_by_role("link", name="Agents", exact=True).click()
    expect(page.get_by_role("link", name="helper", exact=True)).to_be_visible()
    shot(page, "agents-list")

    page.get_by_role("link", name="helper", exact=True).click()
    page.get_by_role("link", name="Edit").click()
    page.get_by_label("MCP tools").fill("- server: nowhere")
    page.get_by_role("button", name="Save").click()
    invalid = page.locator(".field.invalid", has=page.get_by_label("MCP tools"))
    expect(invalid).to_contain_text(
        "agents[1].mcp_tools[0].server: MCP server 'nowhere' is not defined"
    )
    shot(page, "edit-error")

    page.get_by_label("MCP tools").fill("")
    page.get_by_label("Preamble").fill("You help with orders, briefly.")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url("**/admin/agents/helper")
    expect(page.locator("dl.fields")).to_contain_text("You help with orders, briefly.")
    shot(page, "agent-detail")

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete").click()
    page.wait_for_url("**/admin/agents")
    expect(page.get_by_role("link", name="helper", exact=True)).to_have_count(0)
    assert "helper" not in model_ids(server)
    assert server.config_path.read_text() == CONFIG

    page.get_by_role("navigation").get_by_role("link", name="Revisions").click()
    expect(page.locator("article.revision").first).to_contain_text("- name: helper")
    shot(page, "revisions")

    # Restore the version from before the delete: the agent comes back.
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():  # answered 204 with HX-Redirect to the revisions
        page.locator("article.revision").nth(1).get_by_role("button", name="Restore").click()
    expect(page.locator("article.revision").first).to_contain_text("restored revision")
    assert "helper" in model_ids(server)
    shot(page, "revisions-restored")
    deleted = httpx.delete(f"{server.url}/admin/agents/helper")
    assert deleted.status_code == 204 and server.config_path.read_text() == CONFIG


def test_judge_form_with_broken_yaml_shows_the_error_inline(
    page: Page, server: GatewayServer
) -> None:
    page.goto(f"{server.url}/admin/judges/new")
    page.get_by_label("Name").fill("strict")
    page.get_by_label("Provider").select_option("openai")
    page.get_by_label("Model").fill("m")
    page.get_by_label("Rubrics").fill("accuracy: [unclosed")
    page.get_by_role("button", name="Create judge").click()

    field = page.locator(".field.invalid", has=page.get_by_label("Rubrics"))
    expect(field).to_contain_text("Not valid YAML")
    expect(page.get_by_label("Name")).to_have_value("strict")
    shot(page, "judge-form-error")
    assert server.config_path.read_text() == CONFIG


def test_config_editor_saves_and_refuses_a_stale_or_invalid_file(
    page: Page, server: GatewayServer
) -> None:
    page.goto(f"{server.url}/admin/config")
    editor = page.locator("textarea#id_text")
    expect(editor).to_have_value(re.compile(r"api_key: sk-…6789"))
    editor.fill(editor.input_value().replace("support agent of ACME", "support agent of ACME Inc."))
    with page.expect_navigation():  # the save answers 204 with HX-Redirect to the editor
        page.get_by_role("button", name="Save").click()
    expect(page.locator("textarea#id_text")).to_have_value(re.compile("ACME Inc."))
    assert "support agent of ACME Inc." in server.config_path.read_text()
    assert "sk-browser-secret-0123456789" in server.config_path.read_text()

    server.config_path.write_text(server.config_path.read_text() + "# edited by hand\n")
    page.locator("textarea#id_text").fill(CONFIG.replace("gpt-4.1-mini\n", "gpt-5\n", 1))
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".banner.error")).to_contain_text("changed since you read it")
    assert server.config_path.read_text().endswith("# edited by hand\n")

    page.goto(f"{server.url}/admin/config")
    page.locator("textarea#id_text").fill(
        CONFIG.replace("provider: openai\n", "provider: cohere\n")
    )
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".banner.error")).to_contain_text(
        "judges[0].provider: provider 'cohere' is not configured"
    )
    shot(page, "config-editor-error")
    assert server.config_path.read_text().endswith("# edited by hand\n")

    page.goto(f"{server.url}/admin/config")
    page.locator("textarea#id_text").fill(CONFIG)
    with page.expect_navigation():
        page.get_by_role("button", name="Save").click()
    assert server.config_path.read_text() == CONFIG


def test_a_misspelt_key_loads_and_is_named_on_the_config_page_and_in_the_log(
    page: Page, server: GatewayServer
) -> None:
    page.goto(f"{server.url}/admin/config")
    page.locator("textarea#id_text").fill(
        CONFIG.replace("    preamble:", "    histroy: false\n    preamble:")
    )
    with page.expect_navigation():
        page.get_by_role("button", name="Save").click()

    warning = "agents[0].histroy: not a key the gateway knows, ignored (did you mean `history`?)"
    expect(page.locator(".banner.warning")).to_contain_text(warning)
    shot(page, "config-unknown-key")
    assert "config_warning" in server.log() and "agents[0].histroy" in server.log()

    page.locator("textarea#id_text").fill(CONFIG)
    with page.expect_navigation():
        page.get_by_role("button", name="Save").click()
    expect(page.locator(".banner.warning")).to_have_count(0)
    assert server.config_path.read_text() == CONFIG
