"""The admin API against its own OpenAPI 3.1 document, fuzzed by schemathesis."""

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.configs import ORIGINAL_EXAMPLE
from tests.server import PROJECT_DIR, GatewayServer

ARTIFACTS = PROJECT_DIR / "test-artifacts"
# Keys that exist in the example, so that item routes are also fuzzed on real entries.
KNOWN_KEYS = """
[[operations]]
include-path-regex = "^/admin/agents/[{]name[}]"
parameters = { "path.name" = "code-reviewer" }

[[operations]]
include-path-regex = "^/admin/judges/[{]name[}]"
parameters = { "path.name" = "review_depth" }

[[operations]]
include-path-regex = "^/admin/providers/[{]name[}]"
parameters = { "path.name" = "gemini" }

[[operations]]
include-path-regex = "^/admin/mcp/[{]name[}]"
parameters = { "path.name" = "greeter" }

[[operations]]
include-path-regex = "^/admin/revisions/[{]revision_id[}]"
parameters = { "path.revision_id" = 1 }

# The coverage phase sends each body variant of a PUT with an empty If-Match, which matches
# no ETag: all of them ended in the same 412 before the body was read (4,500 cases, 44 s for
# /admin/config alone). The fuzzing and stateful phases still send these PUTs, and the
# coverage phase still tries the same entry schemas on the collections' POST routes.
[[operations]]
include-path-regex = "^/admin/(config|[a-z]+/[{]name[}])$"
include-method = "PUT"
phases.coverage.enabled = false
"""
CHECKS = (
    "not_a_server_error,status_code_conformance,content_type_conformance,"
    "response_headers_conformance,response_schema_conformance"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    gateway = GatewayServer(tmp_path_factory.mktemp("fuzzed"), ORIGINAL_EXAMPLE.read_text()).start()
    yield gateway
    gateway.stop()


def test_openapi_is_3_1_and_describes_every_admin_route(server: GatewayServer) -> None:
    document = httpx.get(f"{server.url}/admin/openapi.json").json()

    assert document["openapi"].startswith("3.1")
    paths = document["paths"]
    for collection, key in [
        ("agents", "name"),
        ("judges", "name"),
        ("experiments", "name"),
        ("providers", "name"),
        ("mcp", "name"),
    ]:
        assert set(paths[f"/admin/{collection}"]) == {"get", "post"}
        assert set(paths[f"/admin/{collection}/{{{key}}}"]) == {"get", "put", "delete"}
        assert set(paths[f"/admin/{collection}/new"]) == {"get"}
        assert set(paths[f"/admin/{collection}/{{{key}}}/edit"]) == {"get"}
        create = paths[f"/admin/{collection}"]["post"]
        assert set(create["requestBody"]["content"]) == {"application/json", "application/yaml"}
        assert {"201", "409", "422"} <= set(create["responses"])
    assert set(paths["/admin/config"]) == {"get", "put"}
    assert "/admin/revisions/{revision_id}/restore" in paths
    for path in ("/admin/", "/admin/conversations", "/admin/usage"):
        assert "get" in paths[path]
    provider_create = paths["/admin/providers"]["post"]["requestBody"]["content"][
        "application/json"
    ]
    named = provider_create["schema"]["properties"]["name"]  # optional: the kind by default
    assert "kind" in named["description"]


@pytest.mark.timeout(420)  # the fuzzer alone may take minutes on a 2-core machine
@pytest.mark.slow
def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    server: GatewayServer, tmp_path: Path
) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(KNOWN_KEYS)
    command = [
        str(Path(sys.executable).with_name("st")), "--config-file", str(config), "run", f"{server.url}/admin/openapi.json",
        "--checks", CHECKS,
        "--header", "Accept: application/json",
        "--phases", "examples,coverage,fuzzing,stateful",
        "--max-examples", "10",
        "--seed", "20261121",
        "--workers", "1",
        "--no-shrink",
        "--request-timeout", "10",
        "--report", "junit",
        "--report-dir", str(tmp_path),
    ]  # fmt: skip

    result = subprocess.run(
        command, capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path
    )

    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "schemathesis.txt").write_text(result.stdout + result.stderr)
    assert result.returncode == 0, result.stdout[-6000:]
    document = httpx.get(f"{server.url}/admin/openapi.json").json()
    operations = sum(len(methods) for methods in document["paths"].values())
    assert f"Tested: {operations}" in result.stdout  # every route of the document
    generated, passed = re.search(r"(\d+) generated, (\d+) passed", result.stdout).groups()
    assert generated == passed
