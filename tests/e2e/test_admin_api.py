"""The admin surface end to end: one daphne process serving the original service's example.

After each test the file is put back through the API, byte for byte; tests that cannot
share that state start no server of their own here (see test_admin_concurrency).
"""

import html
import re
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from agents.loader import ConfigError, load_config_data
from agents.snapshot import file_etag
from agents.yamldoc import parse
from tests.configs import ORIGINAL_EXAMPLE
from tests.polling import wait_for
from tests.server import GatewayServer

ORIGINAL = ORIGINAL_EXAMPLE.read_text()
JSON = {"Accept": "application/json"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    gateway = GatewayServer(tmp_path_factory.mktemp("admin"), ORIGINAL).start()
    yield gateway
    gateway.stop()


@pytest.fixture
def admin(server: GatewayServer) -> Iterator[httpx.Client]:
    """A JSON client of /admin; the config file is put back after the test."""
    with httpx.Client(base_url=f"{server.url}/admin", headers=JSON, timeout=10) as client:
        yield client
        if server.config_path.read_text() != ORIGINAL:
            restored = client.put("/config", content=ORIGINAL, headers=YAML_BODY)
            if restored.status_code == 403:
                # The open admin may not put a stdio MCP server back: by hand, as an operator.
                edit_by_hand(server, ORIGINAL)
            else:
                assert restored.status_code == 204, restored.text
    assert server.config_path.read_text() == ORIGINAL


def edit_by_hand(server: GatewayServer, text: str) -> None:
    """Write the file as an operator would, and wait until the gateway applied it."""
    loaded = server.log().count('"event":"config_loaded"')
    server.config_path.write_text(text)
    wait_for(
        lambda: server.log().count('"event":"config_loaded"') > loaded, "the hand edit applied"
    )


YAML_BODY = {"Content-Type": "application/yaml"}


def validator_problems(change: Callable[[dict[str, Any]], None]) -> list[str]:
    """What the config validator says about the example after ``change``."""
    data = parse(ORIGINAL)
    change(data)
    with pytest.raises(ConfigError) as rejected:
        load_config_data(data)
    return rejected.value.problems


# ---- JSON CRUD of every collection ------------------------------------------------------

# section: (key, body to create, body to update, invalid body)
COLLECTIONS: dict[str, tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "agents": (
        "t-agent",
        {"name": "t-agent", "provider": "openai", "model": "m1"},
        {"name": "t-agent", "provider": "openai", "model": "m2", "preamble": "Be brief."},
        {"name": "t-agent", "provider": "cohere", "model": "m"},
    ),
    "judges": (
        "t-judge",
        {"name": "t-judge", "provider": "openai", "model": "j1", "rubrics": {"clarity": "Clear?"}},
        {"name": "t-judge", "provider": "gemini", "model": "j2", "rubrics": {"tone": "Polite?"}},
        {"name": "t-judge", "provider": "openai", "model": "j", "rubrics": {}, "sampling_rate": 2},
    ),
    "experiments": (
        "t-exp",
        {"name": "t-exp", "strategy": "split", "variants": [{"agent": "gpt-assistant"}]},
        {
            "name": "t-exp",
            "strategy": "shadow",
            "primary": "gpt-assistant",
            "variants": [{"agent": "gpt-assistant"}, {"agent": "gemini-assistant", "weight": 2}],
        },
        {"name": "t-exp", "strategy": "split", "variants": [{"agent": "nope"}]},
    ),
    "providers": (
        "groq",
        {"name": "groq", "api_key": "gsk-0123456789abcdef"},
        {"api_key": "gsk-fedcba9876543210", "timeout": 30},
        {"name": "groq", "timeout": -1},
    ),
    "mcp": (
        "docs",
        {"name": "docs", "transport": "http", "url": "http://127.0.0.1:9/mcp"},
        {"transport": "http", "url": "http://127.0.0.1:10/mcp"},  # stdio: not the open admin's
        {"name": "docs", "transport": "http"},
    ),
}


def add_entry(section: str, body: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        body_without_key = dict(body)
        if isinstance(data.get(section), dict):
            data[section][body_without_key.pop("name")] = body_without_key
        else:
            data.setdefault(section, []).append(body_without_key)

    return change


@pytest.mark.parametrize("section", COLLECTIONS)
def test_collection_json_crud_answers_every_status(
    admin: httpx.Client, server: GatewayServer, section: str
) -> None:
    key, created, updated, invalid = COLLECTIONS[section]

    response = admin.post(f"/{section}", json=created)
    assert response.status_code == 201, response.text
    assert admin.post(f"/{section}", json=created).status_code == 409

    listed = admin.get(f"/{section}").json()
    keys = [item["name"] for item in listed] if isinstance(listed, list) else list(listed)
    assert key in keys
    assert admin.get(f"/{section}/{key}").status_code == 200

    response = admin.put(f"/{section}/{key}", json=updated)
    assert response.status_code == 200, response.text
    shown = admin.get(f"/{section}/{key}").json()
    assert {k: v for k, v in shown.items() if k != "api_key"} == {
        k: v for k, v in updated.items() if k != "api_key"
    }
    other = {**updated, "name": "someone-else"}
    assert admin.put(f"/{section}/{key}", json=other).status_code == 400
    assert admin.put(f"/{section}/missing-one", json=updated).status_code in (400, 404)

    assert admin.delete(f"/{section}/{key}").status_code == 204
    assert admin.delete(f"/{section}/{key}").status_code == 404
    assert admin.get(f"/{section}/{key}").status_code == 404

    before = server.config_path.read_bytes()
    rejected = admin.post(f"/{section}", json=invalid)
    assert rejected.status_code == 422
    assert rejected.json()["error"]["problems"] == validator_problems(add_entry(section, invalid))
    assert rejected.json()["error"]["message"] == "\n".join(rejected.json()["error"]["problems"])
    assert server.config_path.read_bytes() == before

    assert (
        admin.post(
            f"/{section}", content=b"{not json", headers={"Content-Type": "application/json"}
        ).status_code
        == 400
    )
    assert admin.post(f"/{section}", json=["not", "an", "object"]).status_code == 400


def test_update_of_missing_entry_is_404(admin: httpx.Client) -> None:
    response = admin.put(
        "/agents/ghost", json={"name": "ghost", "provider": "openai", "model": "m"}
    )

    assert response.status_code == 404
    assert response.json()["error"]["message"] == "agent 'ghost' does not exist"


def test_experiment_cannot_take_an_agent_name(admin: httpx.Client) -> None:
    body = {
        "name": "gpt-assistant",
        "strategy": "split",
        "variants": [{"agent": "gemini-assistant"}],
    }

    assert admin.post("/experiments", json=body).status_code == 409


@pytest.mark.parametrize(
    ("path", "change"),
    [
        ("/judges/quality", lambda data: data["judges"].pop(0)),
        ("/providers/anthropic", lambda data: data["providers"].pop("anthropic")),
        ("/mcp/greeter", lambda data: data["mcp"].pop("greeter")),
    ],
)
def test_delete_of_referenced_entry_is_422_and_leaves_the_file_byte_identical(
    admin: httpx.Client, server: GatewayServer, path: str, change: Callable[[dict[str, Any]], Any]
) -> None:
    response = admin.delete(path)

    assert response.status_code == 422
    assert response.json()["error"]["problems"] == validator_problems(change)
    assert server.config_path.read_text() == ORIGINAL


def test_agent_crud_keeps_every_comment_and_unknown_section(
    admin: httpx.Client, server: GatewayServer
) -> None:
    admin.post("/agents", json={"name": "tmp", "provider": "openai", "model": "m"})
    admin.put("/agents/tmp", json={"name": "tmp", "provider": "gemini", "model": "n"})
    admin.put("/agents/gpt-assistant", json={**parse(ORIGINAL)["agents"][1], "model": "gpt-4.1"})
    admin.put("/agents/gpt-assistant", json=parse(ORIGINAL)["agents"][1])
    admin.delete("/agents/tmp")

    assert server.config_path.read_text() == ORIGINAL


def test_update_keeps_keys_the_schema_does_not_know(
    admin: httpx.Client, server: GatewayServer
) -> None:
    text = ORIGINAL.replace(
        "    model: gpt-4o\n",
        "    model: gpt-4o\n    temperature_hint: 0.2  # from a newer version\n",
    )
    assert admin.put("/config", content=text, headers=YAML_BODY).status_code == 204

    response = admin.put(
        "/agents/gpt-assistant",
        json={"name": "gpt-assistant", "provider": "openai", "model": "gpt-4.1"},
    )

    assert response.status_code == 200
    assert "    temperature_hint: 0.2  # from a newer version\n" in server.config_path.read_text()
    assert "memory:\n  backend:\n" in server.config_path.read_text()


def test_created_agent_is_served_by_v1_models(admin: httpx.Client, server: GatewayServer) -> None:
    admin.post("/agents", json={"name": "fresh", "provider": "openai", "model": "m"})

    models = httpx.get(f"{server.url}/v1/models").json()["data"]

    assert "fresh" in [model["id"] for model in models]


# ---- bodies: YAML and forms ------------------------------------------------------------


def test_yaml_bodies_create_and_update(admin: httpx.Client) -> None:
    created = admin.post(
        "/agents",
        content="name: yamlie\nprovider: gemini\nmodel: g\npreamble: |\n  one\n  two\n",
        headers={"Content-Type": "application/x-yaml"},
    )
    updated = admin.put(
        "/agents/yamlie",
        content="provider: openai\nmodel: 'on'\n",
        headers={"Content-Type": "text/yaml"},
    )

    assert created.status_code == 201
    assert created.json()["preamble"] == "one\ntwo\n"
    assert updated.status_code == 200
    assert updated.json() == {"name": "yamlie", "provider": "openai", "model": "on"}


def test_malformed_yaml_body_is_400(admin: httpx.Client) -> None:
    response = admin.post("/agents", content="name: [unclosed", headers=YAML_BODY)

    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("the body is not valid YAML")


def test_carriage_returns_in_json_and_yaml_bodies_are_stored_as_line_feeds(
    admin: httpx.Client, server: GatewayServer
) -> None:
    body = {"name": "crlf", "provider": "openai", "model": "m", "preamble": "one\r\ntwo\rthree"}
    created = admin.post("/agents", json=body)
    updated = admin.put(
        "/agents/crlf",
        content='provider: openai\nmodel: m\npreamble: "four\\r\\nfive"\n',
        headers=YAML_BODY,
    )

    assert created.status_code == 201, created.text
    assert created.json()["preamble"] == "one\ntwo\nthree"
    assert updated.status_code == 200, updated.text
    assert updated.json()["preamble"] == "four\nfive"
    assert b"\r" not in server.config_path.read_bytes()


@pytest.mark.parametrize("character", ["\x85", "\u2028", "\u2029"])
def test_line_separators_yaml_cannot_read_back_are_400_naming_the_field(
    admin: httpx.Client, server: GatewayServer, character: str
) -> None:
    before = server.config_path.read_bytes()
    body = {"name": "sep", "provider": "openai", "model": "m", "preamble": f"a\nb{character}c"}

    response = admin.post("/agents", json=body)

    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        f"preamble: U+{ord(character):04X} cannot be stored in a YAML file"
    )
    assert server.config_path.read_bytes() == before


def csrf_token(client: httpx.Client, path: str) -> str:
    page = client.get(path, headers={"Accept": "text/html"}).text
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)


def test_form_create_redirects_to_the_new_agent(admin: httpx.Client) -> None:
    token = csrf_token(admin, "/agents/new")

    response = admin.post(
        "/agents",
        data={
            "csrfmiddlewaretoken": token,
            "name": "formed",
            "provider": "openai",
            "model": "m",
            "preamble": "Hello\r\nthere",
            "judges": ["quality"],
            "mcp_tools": "- server: greeter",
        },
        headers={"Accept": "text/html"},
    )

    assert response.status_code == 303
    assert response.headers["Location"] == "/admin/agents/formed"
    assert admin.get("/agents/formed").json() == {
        "name": "formed",
        "provider": "openai",
        "model": "m",
        "preamble": "Hello\nthere",
        "judges": ["quality"],
        "mcp_tools": [{"server": "greeter"}],
    }


def test_htmx_form_update_answers_204_with_hx_redirect(admin: httpx.Client) -> None:
    token = csrf_token(admin, "/agents/gemini-assistant/edit")

    response = admin.put(
        "/agents/gemini-assistant",
        content="provider=gemini&model=gemini-2.5-flash&preamble=Short.",
        headers={
            "HX-Request": "true",
            "X-CSRFToken": token,
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )

    assert response.status_code == 204
    assert response.headers["HX-Redirect"] == "/admin/agents/gemini-assistant"
    assert admin.get("/agents/gemini-assistant").json()["model"] == "gemini-2.5-flash"


def test_form_without_csrf_token_is_403(admin: httpx.Client, server: GatewayServer) -> None:
    response = httpx.post(
        f"{server.url}/admin/agents",
        data={"name": "sneaky", "provider": "openai", "model": "m"},
        headers=JSON,
    )

    assert response.status_code == 403
    assert "CSRF" in response.json()["error"]["message"]


def test_rejected_form_shows_the_validator_message_on_its_field(
    admin: httpx.Client, server: GatewayServer
) -> None:
    token = csrf_token(admin, "/agents/new")
    problem = validator_problems(
        add_entry("agents", {"name": "bad", "provider": "cohere", "model": "m"})
    )[0]

    response = admin.post(
        "/agents",
        data={"csrfmiddlewaretoken": token, "name": "bad", "provider": "cohere", "model": "m"},
        headers={"Accept": "text/html", "HX-Request": "true"},
    )

    assert response.status_code == 422
    assert "<html" not in response.text
    field = re.search(r'<div class="field invalid">(.*?)</div>', response.text, re.S).group(1)
    assert 'for="id_provider"' in field
    assert html.escape(problem) in field
    assert server.config_path.read_text() == ORIGINAL


def test_form_field_yaml_error_names_line_and_column_without_parser_noise(
    admin: httpx.Client, server: GatewayServer
) -> None:
    token = csrf_token(admin, "/agents/new")

    response = admin.post(
        "/agents",
        data={
            "csrfmiddlewaretoken": token,
            "name": "yamly",
            "provider": "openai",
            "model": "m",
            "mcp_tools": "- server: greeter\n  only: [a, b",
        },
        headers={"Accept": "text/html"},
    )

    assert response.status_code == 400
    errors = [
        html.unescape(text) for text in re.findall(r'<p class="error">(.*?)</p>', response.text)
    ]
    assert errors == [
        "Not valid YAML: line 2, column 14: expected ',' or ']', but got '<stream end>' "
        "(while parsing a flow sequence started on line 2)"
    ]
    assert server.config_path.read_text() == ORIGINAL


def test_restore_button_form_restores_a_revision(
    admin: httpx.Client, server: GatewayServer
) -> None:
    admin.post("/agents", json={"name": "restorable", "provider": "openai", "model": "m"})
    before = admin.get("/revisions").json()["data"][1]["id"]  # the file before that create
    token = csrf_token(admin, "/revisions")

    response = admin.post(
        f"/revisions/{before}/restore",
        data={"csrfmiddlewaretoken": token},
        headers={"Accept": "text/html"},
    )

    assert response.status_code == 303
    assert response.headers["Location"] == "/admin/revisions"
    assert "restorable" not in server.config_path.read_text()
    newest = admin.get("/revisions").json()["data"][0]
    assert newest["author"] == f"admin (127.0.0.1) (restored revision {before})"


def test_collection_pages_use_titles_and_labels(admin: httpx.Client) -> None:
    mcp = admin.get("/mcp", headers={"Accept": "text/html"}).text
    providers = admin.get("/providers", headers={"Accept": "text/html"}).text

    assert "<title>MCP servers · Gateway admin</title>" in mcp and "<h1>MCP servers</h1>" in mcp
    headers = re.findall(r"<th>(.*?)</th>", providers)
    assert headers == ["Name", "Kind", "API key", "Base URL", "State"]


def test_name_choices_that_do_not_exist_yet_say_so(admin: httpx.Client) -> None:
    minimal = "providers: {openai: {api_key: sk-minimal-0123456789}}\nagents:\n  - {name: solo, provider: openai, model: m}\n"
    assert admin.put("/config", content=minimal, headers=YAML_BODY).status_code == 204

    page = admin.get("/agents/new", headers={"Accept": "text/html"}).text
    experiment = admin.get("/experiments/new", headers={"Accept": "text/html"}).text

    blocks = page.split('<div class="field')[1:]
    fields = {re.search(r"<label[^>]*>([^<]+)</label>", block).group(1): block for block in blocks}
    assert "None defined yet." in fields["Judges"]
    assert "None defined yet." not in fields["Subagents"] and "solo" in fields["Subagents"]
    assert '<div class="field checkbox">' in experiment  # box and label on one row


# ---- representations ------------------------------------------------------------------


def test_same_route_serves_page_fragment_and_json(admin: httpx.Client) -> None:
    page = admin.get("/agents", headers={"Accept": "text/html"})
    fragment = admin.get("/agents", headers={"HX-Request": "true"})
    data = admin.get("/agents", headers={"Accept": "text/html;q=0.5, application/json"})

    assert page.text.lstrip().startswith("<!doctype html>")
    assert 'src="/static/django_htmx/htmx-2.min.js"' in page.text
    assert "<html" not in fragment.text and "gpt-assistant" in fragment.text
    assert data.headers["Content-Type"].startswith("application/json")
    assert [agent["name"] for agent in data.json()][:2] == ["claude-assistant", "gpt-assistant"]


def test_every_page_renders(admin: httpx.Client) -> None:
    paths = [
        "/",
        "/agents/new",
        "/judges/quality",
        "/judges/quality/edit",
        "/experiments",
        "/experiments/new",
        "/providers/openai/edit",
        "/mcp/greeter",
        "/mcp/new",
        "/config",
        "/revisions",
        "/conversations",
        "/usage",
    ]

    for path in paths:
        response = admin.get(path, headers={"Accept": "text/html"})
        assert response.status_code == 200, path
        assert "<!doctype html>" in response.text, path


def test_vendored_htmx_is_served_without_debug(server: GatewayServer) -> None:
    response = httpx.get(f"{server.url}/static/django_htmx/htmx-2.min.js")

    assert response.status_code == 200
    assert 'version:"2.' in response.text


def test_rendered_values_are_escaped(admin: httpx.Client) -> None:
    admin.post(
        "/agents",
        json={
            "name": "x",
            "provider": "openai",
            "model": "m",
            "preamble": "<script>alert(1)</script>",
        },
    )

    page = admin.get("/agents/x", headers={"Accept": "text/html"}).text

    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page


# ---- the whole file -------------------------------------------------------------------


def test_config_get_is_masked_yaml_with_the_etag_of_the_bytes_on_disk(
    admin: httpx.Client, server: GatewayServer
) -> None:
    response = admin.get("/config", headers={"Accept": "*/*"})

    assert response.headers["Content-Type"].startswith("application/yaml")
    assert response.headers["ETag"] == file_etag(server.config_path.read_bytes())
    assert "api_key: sk-…0001\n" in response.text
    assert "sk-ant-example-key-0001" not in response.text
    assert "# --- Telemetry ---" in response.text and "memory:\n" in response.text


def test_config_get_json_is_masked(admin: httpx.Client) -> None:
    data = admin.get("/config").json()

    assert data["providers"]["anthropic"] == {"api_key": "sk-…0001"}
    assert data["memory"]["embedder"]["model"] == "text-embedding-3-small"


def test_config_put_of_masked_text_keeps_the_stored_secrets(
    admin: httpx.Client, server: GatewayServer
) -> None:
    masked = admin.get("/config", headers={"Accept": "application/yaml"})

    response = admin.put(
        "/config", content=masked.text, headers={**YAML_BODY, "If-Match": masked.headers["ETag"]}
    )

    assert response.status_code == 204
    assert server.config_path.read_text() == ORIGINAL


def test_config_put_json_merges_into_the_file(admin: httpx.Client, server: GatewayServer) -> None:
    data = admin.get("/config").json()
    data["agents"][2]["model"] = "gemini-2.5-pro"
    del data["memory"]  # a section this version does not know is kept all the same

    assert admin.put("/config", json=data).status_code == 204

    text = server.config_path.read_text()
    assert text == ORIGINAL.replace("model: gemini-2.5-flash", "model: gemini-2.5-pro")


def test_config_put_json_keeps_the_sections_it_leaves_out(
    admin: httpx.Client, server: GatewayServer
) -> None:
    data = admin.get("/config").json()
    body = {"providers": data["providers"], "agents": data["agents"]}
    body["agents"][2]["model"] = "gemini-2.5-pro"

    assert admin.put("/config", json=body).status_code == 204

    text = server.config_path.read_text()
    assert text == ORIGINAL.replace("model: gemini-2.5-flash", "model: gemini-2.5-pro")


def test_config_put_json_section_set_to_null_is_removed(
    admin: httpx.Client, server: GatewayServer
) -> None:
    assert admin.put("/config", json={"memory": None}).status_code == 204

    data = parse(server.config_path.read_text())
    assert "memory" not in data
    assert data == {key: value for key, value in parse(ORIGINAL).items() if key != "memory"}


def test_config_put_with_stale_if_match_is_412_and_changes_nothing(
    admin: httpx.Client, server: GatewayServer
) -> None:
    stale = admin.get("/config").headers["ETag"]
    admin.post("/agents", json={"name": "meanwhile", "provider": "openai", "model": "m"})
    before = server.config_path.read_bytes()

    response = admin.put("/config", content=ORIGINAL, headers={**YAML_BODY, "If-Match": stale})

    assert response.status_code == 412
    assert server.config_path.read_bytes() == before


def test_if_match_list_matches_when_any_tag_is_current(admin: httpx.Client) -> None:
    etag = admin.get("/config").headers["ETag"]
    entry_etag = admin.get("/agents/gemini-assistant").headers["ETag"]
    body = admin.get("/agents/gemini-assistant").json()

    stale = admin.put("/config", content=ORIGINAL, headers={**YAML_BODY, "If-Match": '"a", "b"'})
    whole = admin.put(
        "/config", content=ORIGINAL, headers={**YAML_BODY, "If-Match": f'"stale", {etag}'}
    )
    item = admin.put(
        "/agents/gemini-assistant", json=body, headers={"If-Match": f'"stale",{entry_etag}'}
    )

    assert stale.status_code == 412
    assert whole.status_code == 204
    assert item.status_code == 200, item.text


def test_config_put_rejected_by_validation_is_422_verbatim_and_byte_identical(
    admin: httpx.Client, server: GatewayServer
) -> None:
    broken = ORIGINAL.replace("provider: gemini\n", "provider: cohere\n")

    response = admin.put("/config", content=broken, headers=YAML_BODY)

    problems = validator_problems(lambda data: data["agents"][2].update(provider="cohere"))
    assert response.status_code == 422
    assert response.json()["error"]["message"] == "\n".join(problems)
    assert server.config_path.read_text() == ORIGINAL


# ---- secrets ---------------------------------------------------------------------------


def test_provider_key_is_masked_everywhere_and_kept_when_sent_back(
    admin: httpx.Client, server: GatewayServer
) -> None:
    listed = admin.get("/providers").json()
    shown = admin.get("/providers/openai").json()
    page = admin.get("/providers/openai", headers={"Accept": "text/html"}).text

    assert listed["openai"]["api_key"] == shown["api_key"] == "sk-…0042"
    assert "sk-openai-example-0042" not in page and "sk-…0042" in page

    assert admin.put("/providers/openai", json=shown).status_code == 200
    assert "    api_key: sk-openai-example-0042\n" in server.config_path.read_text()


def test_a_provider_created_without_a_name_is_named_by_its_kind(
    admin: httpx.Client, server: GatewayServer
) -> None:
    """As in the file, where a provider's name is its kind unless it says otherwise."""
    created = admin.post("/providers", json={"kind": "cohere", "api_key": "sk-cohere-made-0001"})

    assert created.status_code == 201, created.text
    assert admin.get("/providers/cohere").json()["kind"] == "cohere"
    assert "\n  cohere:\n" in server.config_path.read_text()
    nameless = admin.post("/providers", json={"api_key": "sk-none-000000000000001"})
    assert nameless.status_code == 422
    assert "name" in nameless.text


@pytest.mark.parametrize("stale", ["sk-…9999", "********", "sk-ant-…0001"])
def test_provider_key_sent_as_a_foreign_mask_is_422_and_never_written(
    admin: httpx.Client, server: GatewayServer, stale: str
) -> None:
    updated = admin.put("/providers/anthropic", json={"api_key": stale})
    created = admin.post("/providers", json={"name": "groq", "api_key": stale})

    for response in (updated, created):
        assert response.status_code == 422, response.text
        assert "looks like a masked secret" in response.json()["error"]["message"]
    assert server.config_path.read_text() == ORIGINAL


def test_whole_config_with_a_foreign_mask_is_422_and_never_written(
    admin: httpx.Client, server: GatewayServer
) -> None:
    yaml_text = ORIGINAL.replace("sk-ant-example-key-0001", "sk-…abcd")
    data = admin.get("/config").json()
    data["providers"]["openai"]["api_key"] = "********"
    with_password = ORIGINAL + "auth:\n  proxy:\n    basic: {username: a, password: '********'}\n"

    responses = [
        admin.put("/config", content=yaml_text, headers=YAML_BODY),
        admin.put("/config", json=data),
        admin.put("/config", content=with_password, headers=YAML_BODY),
    ]

    for response in responses:
        assert response.status_code == 422, response.text
    assert "providers.anthropic.api_key: looks like a masked secret" in responses[0].text
    assert "providers.openai.api_key" in responses[1].text
    assert "auth.proxy.basic.password" in responses[2].text
    assert server.config_path.read_text() == ORIGINAL


def test_passwords_and_short_keys_are_masked_whole_and_kept_when_sent_back(
    admin: httpx.Client, server: GatewayServer
) -> None:
    secured = ORIGINAL + "auth:\n  proxy:\n    basic: {username: a, password: Cor-ect-orse}\n"
    assert admin.put("/config", content=secured, headers=YAML_BODY).status_code == 204

    data = admin.get("/config").json()
    masked = admin.get("/config", headers={"Accept": "application/yaml"})
    sent_back = admin.put("/config", content=masked.text, headers=YAML_BODY)

    assert data["auth"]["proxy"]["basic"]["password"] == "********"
    assert data["providers"]["gemini"]["api_key"] == "********"  # 18 characters
    assert "Cor" not in masked.text and "gemini-example" not in masked.text
    assert sent_back.status_code == 204
    assert server.config_path.read_text() == secured


# ---- revisions -------------------------------------------------------------------------


def test_writes_are_recorded_as_revisions_with_masked_diffs_and_can_be_restored(
    admin: httpx.Client, server: GatewayServer
) -> None:
    admin.post("/agents", json={"name": "rev", "provider": "openai", "model": "m1"})
    admin.put("/agents/rev", json={"name": "rev", "provider": "openai", "model": "m2"})
    admin.put("/providers/openai", json={"api_key": "sk-brand-new-secret-0123"})

    newest = admin.get("/revisions").json()["data"][:3]

    assert [revision["author"] for revision in newest] == ["admin (127.0.0.1)"] * 3
    assert "+    model: m2" in newest[1]["diff"] and "-    model: m1" in newest[1]["diff"]
    assert "sk-brand-new-secret-0123" not in newest[0]["diff"]
    assert "+    api_key: sk-…0123" in newest[0]["diff"]
    assert newest[0]["etag"] == file_etag(server.config_path.read_bytes())

    first = newest[2]["id"]
    response = admin.post(f"/revisions/{first}/restore", json={})
    assert response.status_code == 200
    detail = admin.get(f"/revisions/{first}").json()
    assert "model: m1" in server.config_path.read_text()
    assert "sk-openai-example-0042" in server.config_path.read_text()
    assert "sk-openai-example-0042" not in detail["text"]
    assert admin.post("/revisions/999999/restore", json={}).status_code == 404


def test_hand_edit_is_recorded_as_file_edit(admin: httpx.Client, server: GatewayServer) -> None:
    server.config_path.write_text(ORIGINAL.replace("model: gpt-4o\n", "model: gpt-4o-2024\n"))

    def recorded() -> Any:
        newest = admin.get("/revisions").json()["data"][0]
        return newest if "+    model: gpt-4o-2024" in newest["diff"] else None

    assert wait_for(recorded, "the hand edit's revision")["author"] == "file edit"


def test_invalid_hand_edit_shows_a_banner_on_every_page_until_fixed(
    admin: httpx.Client, server: GatewayServer
) -> None:
    server.config_path.write_text(ORIGINAL.replace("provider: gemini\n", "provider: cohere\n"))
    problem = "agents[2].provider: provider &#x27;cohere&#x27; is not configured"

    wait_for(lambda: problem in admin.get("/", headers={"Accept": "text/html"}).text, "the banner")
    for path in ("/agents", "/providers/openai", "/config", "/revisions", "/usage"):
        assert problem in admin.get(path, headers={"Accept": "text/html"}).text, path
    assert admin.get("/agents/gemini-assistant").json()["provider"] == "gemini"  # last good
    editable = admin.get("/config", headers={"Accept": "application/yaml"}).text
    assert "provider: cohere\n" in editable and "sk-ant-example-key-0001" not in editable

    admin.put("/config", content=ORIGINAL, headers=YAML_BODY)
    assert problem not in admin.get("/", headers={"Accept": "text/html"}).text


def test_yaml_error_on_a_secret_line_never_shows_the_secret(
    admin: httpx.Client, server: GatewayServer
) -> None:
    secret = "sk-openai-example-0042"
    broken = ORIGINAL.replace(f"api_key: {secret}", f"api_key: *{secret}")
    server.config_path.write_text(broken)

    overview = wait_for(lambda: admin.get("/").json()["problems"], "the problems")
    banner = admin.get("/agents", headers={"Accept": "text/html"}).text
    rejected = admin.put("/config", content=broken, headers=YAML_BODY)
    admin.put("/config", content=ORIGINAL, headers=YAML_BODY)

    assert "undefined alias" in overview[0] and "undefined alias" in banner
    assert rejected.status_code == 400 and "undefined alias" in rejected.text
    for shown in (str(overview), banner, rejected.text, server.log()):
        assert secret not in shown


# ---- loopback only ---------------------------------------------------------------------


@pytest.mark.parametrize("header", ["X-Forwarded-For", "Forwarded"])
def test_request_through_a_proxy_is_403_saying_how_to_enable_auth_admin(
    admin: httpx.Client, header: str
) -> None:
    response = admin.get("/agents", headers={header: "for=203.0.113.9"})

    assert response.status_code == 403
    assert "auth:\n  admin:\n    basic:" in response.json()["error"]["message"]


def test_other_host_name_is_403_against_dns_rebinding(
    admin: httpx.Client, server: GatewayServer
) -> None:
    body = {"name": "rebound", "provider": "openai", "model": "m"}

    created = admin.post("/agents", json=body, headers={"Host": "attacker.example"})
    page = admin.get("/agents", headers={"Host": "attacker.example:80", "Accept": "text/html"})

    assert created.status_code == 403
    message = created.json()["error"]["message"]
    assert "DNS-rebinding" in message and "configure auth.admin" in message
    assert "rebound" not in server.config_path.read_text()
    assert page.status_code == 403 and page.headers["Content-Type"].startswith("text/html")
    assert "DNS-rebinding" in html.unescape(page.text)
    for host in ("localhost", f"localhost:{server.port}", "[::1]:8421", "127.0.0.1"):
        assert admin.get("/agents", headers={"Host": host}).status_code == 200, host
    v1 = httpx.get(f"{server.url}/v1/models", headers={"Host": "attacker.example"})
    assert v1.status_code == 200


BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({}, "CSRF check failed"),
        ({"Origin": "http://evil.example"}, "CSRF check failed"),
        ({"Content-Type": "text/plain"}, "CSRF check failed"),
        ({"X-Forwarded-For": "203.0.113.9"}, "only clients on this machine"),
        ({"Host": "attacker.example"}, "DNS-rebinding"),
    ],
    ids=["no-token", "cross-site", "text-plain", "remote", "wrong-host"],
)
def test_refused_form_is_a_403_page_saying_why(
    server: GatewayServer, headers: dict[str, str], why: str
) -> None:
    response = httpx.post(
        f"{server.url}/admin/agents",
        data={"name": "sneaky", "provider": "openai", "model": "m"},
        headers={**BROWSER, **headers},
    )

    assert response.status_code == 403
    assert response.headers["Content-Type"].startswith("text/html")
    assert why in html.unescape(response.text) and "<title>403" in response.text
    assert "sneaky" not in server.config_path.read_text()


def test_form_with_an_expired_csrf_token_is_a_403_page(server: GatewayServer) -> None:
    with httpx.Client(base_url=f"{server.url}/admin", headers=BROWSER) as browser:
        token = csrf_token(browser, "/agents/new")
        browser.cookies.set("csrftoken", "a" * 32)  # the cookie the token was made for is gone
        response = browser.post("/agents", data={"csrfmiddlewaretoken": token, "name": "late"})

    assert response.status_code == 403
    assert "no longer valid" in html.unescape(response.text)


def test_remote_refusal_does_not_disclose_the_config_path(
    admin: httpx.Client, server: GatewayServer
) -> None:
    remote = admin.get("/agents", headers={"X-Forwarded-For": "203.0.113.9"})
    rebound = admin.get("/agents", headers={"Host": "attacker.example"})

    for response in (remote, rebound):
        assert response.status_code == 403
        assert str(server.config_path) not in response.text
        assert str(server.workdir) not in response.text


# ---- errors outside the routes ----------------------------------------------------------


def test_unknown_admin_route_is_404_in_the_negotiated_format(admin: httpx.Client) -> None:
    as_json = admin.get("/nothing")
    as_page = admin.get("/nothing", headers={"Accept": "text/html"})

    assert as_json.status_code == 404
    assert as_json.json()["error"]["message"] == "nothing at /admin/nothing"
    assert as_page.status_code == 404 and as_page.headers["Content-Type"].startswith("text/html")
    assert 'class="banner error"' in as_page.text and "/admin/config" in as_page.text


def test_method_not_allowed_on_an_admin_route_is_405_json(admin: httpx.Client) -> None:
    response = admin.patch("/agents/x")

    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert "PUT" in response.headers["Allow"]


# ---- recorded data ---------------------------------------------------------------------


@pytest.fixture
def recorded_rows(server: GatewayServer) -> Iterator[str]:
    user = "user-records-1"
    database = sqlite3.connect(server.database_url.removeprefix("sqlite:///"))
    with database:
        for index in range(3):
            database.execute(
                "INSERT INTO inference_storedmessage (user_id, model, role, content, created_at) "
                "VALUES (?, 'gpt-assistant', ?, ?, datetime('now'))",
                (user, "user" if index % 2 == 0 else "assistant", f"message {index}"),
            )
        database.execute(
            "INSERT INTO inference_ledgerentry (user_id, agent, experiment, variant, provider, "
            "completion_id, prompt_tokens, completion_tokens, total_tokens, created_at) "
            "VALUES (?, 'gpt-assistant', '', '', 'openai', 'chatcmpl-1', 10, 5, 15, datetime('now'))",
            (user,),
        )
    yield user
    with database:
        database.execute("DELETE FROM inference_storedmessage WHERE user_id = ?", (user,))
        database.execute("DELETE FROM inference_ledgerentry WHERE user_id = ?", (user,))
    database.close()


def test_conversations_of_a_user_are_paginated_newest_first(
    admin: httpx.Client, recorded_rows: str
) -> None:
    first = admin.get("/conversations", params={"user": recorded_rows}).json()

    assert [row["content"] for row in first["data"]] == ["message 2", "message 1", "message 0"]
    assert first["next"] is None
    assert set(first["data"][0]) == {"user", "model", "role", "content", "created_at"}
    page = admin.get(
        "/conversations", params={"user": recorded_rows}, headers={"Accept": "text/html"}
    )
    assert "message 1" in page.text


def test_usage_of_a_user_in_each_window(admin: httpx.Client, recorded_rows: str) -> None:
    usage = admin.get("/usage", params={"user": recorded_rows}).json()

    assert usage == {
        "user": recorded_rows,
        "windows": {"hour": 15, "day": 15, "month": 15},
        "cost_usd": {"hour": 0.0, "day": 0.0, "month": 0.0},  # rows without a price
    }
    assert admin.get("/usage").status_code == 400


@pytest.mark.parametrize("cursor", ["abc", "\u00b2", "\u0663", "9" * 5000, str(2**63), "0"])
def test_bad_cursor_is_400(admin: httpx.Client, cursor: str) -> None:
    for path in ("/revisions", "/conversations?user=a"):
        response = admin.get(path, params={"cursor": cursor})

        assert response.status_code == 400, (path, response.text)
        assert response.json()["error"]["message"].startswith("cursor:")


# ---- a config file that is not UTF-8 -----------------------------------------------------


def test_write_to_a_file_that_is_not_utf8_is_422_until_put_config_replaces_it(
    admin: httpx.Client, server: GatewayServer
) -> None:
    broken = ORIGINAL.encode() + b"# caf\xe9 (Latin-1)\n"
    server.config_path.write_bytes(broken)
    body = {"name": "after-latin1", "provider": "openai", "model": "m"}

    created = admin.post("/agents", json=body)

    assert created.status_code == 422
    assert "the config file on disk is not UTF-8 text" in created.json()["error"]["message"]
    assert "PUT /admin/config" in created.json()["error"]["message"]
    assert server.config_path.read_bytes() == broken
    replaced = admin.put("/config", content=ORIGINAL, headers=YAML_BODY)
    assert replaced.status_code == 204, replaced.text
    assert server.config_path.read_text() == ORIGINAL


def test_config_put_with_a_value_unlike_its_yaml_tag_is_refused_and_leaves_the_file(
    admin: httpx.Client, server: GatewayServer
) -> None:
    before = server.config_path.read_bytes()
    text = ORIGINAL.replace("model: gemini-2.5-flash", "model: !!int gemini")

    response = admin.put("/config", content=text, headers=YAML_BODY)

    assert response.status_code in (400, 422), response.text
    assert "not valid YAML" in response.json()["error"]["message"]
    assert server.config_path.read_bytes() == before


# ---- what the open admin may not write ---------------------------------------------------


def test_open_admin_refuses_a_stdio_mcp_server_and_leaves_the_file(
    admin: httpx.Client, server: GatewayServer
) -> None:
    before = server.config_path.read_bytes()
    stdio = {"name": "shell", "transport": "stdio", "command": "/bin/sh", "args": ["-c", "id"]}

    refused = admin.post("/mcp", json=stdio)
    via_file = admin.put(
        "/config",
        content=ORIGINAL.replace(
            "\nmcp:\n", "\nmcp:\n  shell: {transport: stdio, command: /bin/sh}\n", 1
        ),
        headers=YAML_BODY,
    )

    for response in (refused, via_file):
        assert response.status_code == 403, response.text
        error = response.json()["error"]
        assert error["code"] == "open_admin_forbidden"
        assert "would run a program" in error["message"] and "auth.admin" in error["message"]
    assert server.config_path.read_bytes() == before


def test_open_admin_still_adds_an_http_mcp_server(admin: httpx.Client) -> None:
    created = admin.post(
        "/mcp", json={"name": "web", "transport": "http", "url": "http://127.0.0.1:9/mcp"}
    )
    assert created.status_code == 201, created.text


def test_open_admin_refuses_sending_the_stored_key_to_another_host(
    admin: httpx.Client, server: GatewayServer
) -> None:
    before = server.config_path.read_bytes()
    shown = admin.get("/providers/openai").json()  # the key masked, as every read shows it

    moved = admin.put(
        "/providers/openai", json={**shown, "base_url": "https://collector.example/v1"}
    )

    assert moved.status_code == 403
    assert "stored api_key" in moved.json()["error"]["message"]
    assert server.config_path.read_bytes() == before


def test_open_admin_accepts_a_new_host_with_a_new_key(
    admin: httpx.Client, server: GatewayServer
) -> None:
    shown = admin.get("/providers/openai").json()
    new = {**shown, "base_url": "https://eu.example/v1", "api_key": "sk-new-key-for-eu-0123"}

    assert admin.put("/providers/openai", json=new).status_code == 200
    assert "https://eu.example/v1" in server.config_path.read_text()


# ---- sizes ----------------------------------------------------------------------------------


def test_admin_body_over_one_mib_is_413_and_the_file_is_untouched(
    admin: httpx.Client, server: GatewayServer
) -> None:
    before = server.config_path.read_bytes()
    agent = {"name": "big", "provider": "openai", "model": "m", "preamble": "x" * (2 * 1024 * 1024)}

    response = admin.post("/agents", json=agent)

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"
    assert server.config_path.read_bytes() == before


def test_a_write_that_would_make_the_file_over_one_mib_is_422(
    admin: httpx.Client, server: GatewayServer
) -> None:
    before = server.config_path.read_bytes()
    # 600 KB sent; each line indented in the file's block scalar makes it over 1 MiB.
    agent = {"name": "big", "provider": "openai", "model": "m", "preamble": "line\n" * 120_000}

    response = admin.post("/agents", json=agent)

    assert response.status_code == 422
    assert "at most 1048576 bytes" in str(response.json()["error"])
    assert server.config_path.read_bytes() == before


@pytest.mark.parametrize(
    "header", ["X-Forwarded-Host", "X-Real-IP", "X-Client-IP", "True-Client-IP"]
)
def test_every_proxy_header_makes_a_loopback_client_remote(
    admin: httpx.Client, header: str
) -> None:
    assert admin.get("/agents", headers={header: "203.0.113.9"}).status_code == 403
