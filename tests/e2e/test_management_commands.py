"""The operator commands, run as a person would: ``manage.py`` in a subprocess."""

import subprocess
import sys
from pathlib import Path

from django.contrib.auth.hashers import check_password

from tests.server import PROJECT_DIR


def manage(*arguments: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(PROJECT_DIR / "manage.py"), *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def test_check_config_prints_every_problem_and_exits_1(tmp_path: Path) -> None:
    config = tmp_path / "broken.yaml"
    config.write_text(
        "default_user_id: ''\n"
        "providers: {openai: {api_key: x}}\n"
        "agents: [{name: a, provider: groq, model: m}]\n"
    )
    result = manage("check_config", str(config))
    assert result.returncode == 1
    assert "default_user_id: must not be blank" in result.stderr
    assert "agents[0].provider: provider 'groq' is not configured" in result.stderr


def test_check_config_accepts_a_valid_file(tmp_path: Path) -> None:
    config = tmp_path / "ok.yaml"
    config.write_text(
        "providers: {openai: {api_key: x}}\nagents: [{name: a, provider: openai, model: m}]\n"
    )
    result = manage("check_config", str(config))
    assert result.returncode == 0
    assert "OK (1 agents" in result.stdout


def test_hash_password_prints_a_django_hash_of_the_password() -> None:
    result = manage("hash_password", "--stdin", stdin="s3cret\n")
    assert result.returncode == 0
    hashed = result.stdout.strip()
    assert hashed.startswith("pbkdf2_sha256$")
    assert check_password("s3cret", hashed)
    assert not check_password("other", hashed)
