"""The operator commands, run as a person would: ``manage.py`` in a subprocess."""

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import openai
import psutil
from django.contrib.auth.hashers import check_password

from tests.server import PROJECT_DIR, GatewayServer, free_port


def manage(
    *arguments: str,
    stdin: str = "",
    env: dict[str, str] | None = None,
    unset: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in unset} | (env or {})
    return subprocess.run(
        [sys.executable, str(PROJECT_DIR / "manage.py"), *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env=environment,
        timeout=60,
    )


def test_check_config_prints_every_problem_of_every_stage_and_exits_1(tmp_path: Path) -> None:
    config = tmp_path / "broken.yaml"
    config.write_text(
        "default_user_id: ''\n"
        "providers: {openai: {api_key: '${GW_UNSET_VARIABLE}'}}\n"
        "agents: [{name: a, provider: groq, model: m}, {name: b, provider: openai}]\n"
    )
    result = manage("check_config", str(config))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "providers.openai.api_key: environment variable GW_UNSET_VARIABLE is not set",
        "agents[1].model: field required",
        "default_user_id: must not be blank (remove it to require safety_identifier)",
        "agents[0].provider: provider 'groq' is not configured",
        f"CommandError: {config}: 4 problems",
    ]


def test_check_config_accepts_a_valid_file(tmp_path: Path) -> None:
    config = tmp_path / "ok.yaml"
    config.write_text(
        "providers: {openai: {api_key: x}}\nagents: [{name: a, provider: openai, model: m}]\n"
    )
    result = manage("check_config", str(config))
    assert result.returncode == 0
    assert result.stdout == f"{config}: OK (1 agent, 0 experiments, 0 judges; providers: openai)\n"


def test_check_config_warns_of_a_misspelt_key_with_its_path_and_the_closest_key(
    tmp_path: Path,
) -> None:
    """The file loads (exit 0; the key is kept and ignored), and the typo is named."""
    config = tmp_path / "typo.yaml"
    config.write_text(
        "providers: {openai: {api_key: x}}\n"
        "agents: [{name: a, provider: openai, model: m, histroy: false}]\n"
        "original_service_section: {kept: true}\n"
    )
    result = manage("check_config", str(config))
    assert result.returncode == 0
    assert result.stderr.splitlines() == [
        "warning: agents[0].histroy: not a key the gateway knows, ignored (did you mean `history`?)"
    ]
    assert result.stdout.startswith(f"{config}: OK (1 agent")


def test_hash_password_prints_a_django_hash_of_the_password() -> None:
    result = manage("hash_password", "--stdin", stdin="s3cret\n")
    assert result.returncode == 0
    hashed = result.stdout.strip()
    assert hashed.startswith("pbkdf2_sha256$")
    assert check_password("s3cret", hashed)
    assert not check_password("other", hashed)


def test_serve_refuses_a_busy_port_before_announcing_anything(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "providers: {openai: {api_key: x}}\nagents: [{name: a, provider: openai, model: m}]\n"
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = manage(
            "serve", "--host", "127.0.0.1", "--port", str(port),
            env={"GATEWAY_CONFIG": str(config), "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"},
        )  # fmt: skip
    assert result.returncode == 1
    assert "Serving on" not in result.stdout
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in result.stderr


def test_serve_warns_when_it_listens_beyond_loopback_with_an_open_api(
    tmp_path: Path, gateway: GatewayServer
) -> None:
    """Anyone on the network could spend the operator's provider key; the session's
    gateway, on 127.0.0.1 with the same open /v1, is not warned."""
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "providers: {openai: {api_key: x}}\nagents: [{name: a, provider: openai, model: m}]\n"
    )
    environment = os.environ | {
        "GATEWAY_CONFIG": str(config),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    command = [sys.executable, str(PROJECT_DIR / "manage.py"), "serve", "--host", "0.0.0.0"]
    command += ["--port", str(free_port())]
    server = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment
    )
    try:
        assert server.stdout is not None and server.stderr is not None
        assert server.stdout.readline().startswith("Serving on http://0.0.0.0:")
    finally:
        server.terminate()
        server.wait(timeout=30)
    warning = server.stderr.read()
    assert "warning: /v1 takes no credentials and the gateway listens on 0.0.0.0" in warning
    assert "auth: {proxy: {api_keys: true}}" in warning and "--host 127.0.0.1" in warning
    assert "/v1 takes no credentials" not in gateway.log()


def test_the_demo_starts_its_fake_upstream_on_the_port_it_is_given(tmp_path: Path) -> None:
    """``scripts/demo --upstream-port``: the gateway's demo agent answers through a fake on
    that port (it was fixed on 9100). Run from a checkout of links, so that its ``.demo/``
    is the test's."""
    for entry in PROJECT_DIR.iterdir():
        if entry.name not in (".demo", ".git", "test-artifacts"):
            (tmp_path / entry.name).symlink_to(entry)
    upstream, port = free_port(), free_port()
    command = [str(tmp_path / "scripts" / "demo"), "--upstream-port", str(upstream)]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    environment = os.environ | {"DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}"}
    demo = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=environment,
        start_new_session=True,  # its fake, its gateway and itself: one group to stop
    )
    try:
        assert demo.stdout is not None
        lines = [demo.stdout.readline()]
        while lines[-1] and not lines[-1].startswith("Serving on"):
            lines.append(demo.stdout.readline())
        assert lines[-1].startswith(f"Serving on http://127.0.0.1:{port}")
        assert f"fake OpenAI upstream on http://127.0.0.1:{upstream}/v1\n" in lines
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x")
        answer = client.chat.completions.create(
            model="assistant", messages=[{"role": "user", "content": "Hello"}]
        )
        assert answer.choices[0].message.content
        assert "DEMO_UPSTREAM_PORT" in (tmp_path / ".demo" / "gateway.yaml").read_text()
    finally:
        os.killpg(demo.pid, signal.SIGTERM)
        demo.wait(timeout=30)


def test_serve_listens_where_coulisses_server_section_says_by_default(tmp_path: Path) -> None:
    """``server: {bind, port}`` are serve's defaults: the port it tries is the config's
    (taken here, so nothing starts)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = tmp_path / "gateway.yaml"
        config.write_text(
            "providers: {openai: {api_key: x}}\nagents: [{name: a, provider: openai, model: m}]\n"
            f"server: {{bind: 127.0.0.1, port: {port}}}\n"
        )
        result = manage(
            "serve",
            env={"GATEWAY_CONFIG": str(config), "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"},
        )  # fmt: skip
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in result.stderr


def test_serve_names_the_unset_variable_and_starts_nothing(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text((PROJECT_DIR / "examples" / "gateway.example.yaml").read_text())
    environment = {"GATEWAY_CONFIG": str(config), "DATABASE_URL": f"sqlite:///{tmp_path / 'db'}"}
    result = manage("serve", "--port", "0", env=environment, unset=("OPENAI_API_KEY",))
    assert result.returncode == 1
    assert "Serving on" not in result.stdout
    assert (
        "providers.openai.api_key: environment variable OPENAI_API_KEY is not set" in result.stderr
    )
    assert "OPENAI_API_KEY=sk-... scripts/serve" in result.stderr


def test_check_config_reports_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    config = tmp_path / "latin1.yaml"
    config.write_bytes(b"providers: {openai: {api_key: caf\xe9}}\n")
    result = manage("check_config", str(config))
    assert result.returncode == 1
    assert f"{config} is not UTF-8 text (byte 33)" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_reports_a_config_that_is_not_utf8(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_bytes(b"providers: {openai: {api_key: caf\xe9}}\n")
    environment = {"GATEWAY_CONFIG": str(config), "DATABASE_URL": f"sqlite:///{tmp_path / 'db'}"}
    result = manage("serve", "--port", "0", env=environment)
    assert result.returncode == 1
    assert f"the config file {config} is not UTF-8 text" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_caps_the_malloc_arenas_of_the_server(
    gateway: GatewayServer,
) -> None:
    assert psutil.Process(gateway.pid).environ()["MALLOC_ARENA_MAX"] == "2"
