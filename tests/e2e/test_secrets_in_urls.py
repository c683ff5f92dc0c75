"""A credential in a URL (Gemini's ``?key=``, as the google-genai SDK and Gemini CLI may
send it) is found nowhere afterwards: not in the gateway's log lines, its request
records and their spans (the database), error texts, nor in daphne's own access log
when daphne is run by hand with it on (``daphne gateway.asgi:application``)."""

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fakes.base import FakeUpstream, Reply
from tests.server import PROJECT_DIR, GatewayServer, free_port
from tests.upstreams import shared_config


class BareDaphne(GatewayServer):
    """The gateway as ``daphne -b HOST -p PORT gateway.asgi:application``: daphne's
    defaults, its access log on stdout."""

    def start(self, port: int | None = None) -> "BareDaphne":
        migrate = [self.python, str(PROJECT_DIR / "manage.py"), "migrate", "--verbosity", "0"]
        subprocess.run(migrate, cwd=self.workdir, env=self.env, check=True)
        self.port = port or free_port()
        daphne = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port)]
        with self.log_path.open("ab") as log, self.stdout_path.open("ab") as out:
            self._process = subprocess.Popen(
                [*daphne, "gateway.asgi:application"],
                cwd=self.workdir,
                env=self.env,
                stdout=out,
                stderr=log,
            )
        self._wait_until_healthy()
        return self


@pytest.fixture(scope="module")
def daphne(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[BareDaphne]:
    server = BareDaphne(tmp_path_factory.mktemp("bare-daphne"), shared_config(upstreams))
    server.start()
    yield server
    server.stop()


def test_a_key_in_the_url_is_in_no_log_record_or_error(
    daphne: BareDaphne, fakes: dict[str, FakeUpstream]
) -> None:
    key = f"AIza-secret-{uuid.uuid4().hex}"
    fakes["openai"].script(Reply.of_text("Hi."), Reply.of_text("Streamed."))
    body = {"contents": [{"role": "user", "parts": [{"text": "Hello"}]}]}
    base = f"{daphne.url}/v1beta/models"
    user = {"X-User-Id": "keyed"}
    asked = {
        "generate": httpx.post(
            f"{base}/openai-agent:generateContent?key={key}", json=body, headers=user
        ),
        "stream": httpx.post(
            f"{base}/openai-agent:streamGenerateContent?alt=sse&key={key}", json=body, headers=user
        ),
        "count": httpx.post(f"{base}/openai-agent:countTokens?key={key}", json=body),
        "unknown model": httpx.post(f"{base}/nobody:generateContent?key={key}", json=body),
        "bad body": httpx.post(f"{base}/openai-agent:generateContent?key={key}", json=[]),
        "unknown route": httpx.get(f"{daphne.url}/v1beta/nothing?key={key}"),
    }
    assert {name: answer.status_code for name, answer in asked.items()} == {
        "generate": 200,
        "stream": 200,
        "count": 200,
        "unknown model": 404,
        "bad body": 400,
        "unknown route": 404,
    }
    daphne.stop()  # every record written, every log line flushed

    assert [name for name, answer in asked.items() if key in answer.text] == []
    access_log = daphne.stdout_path.read_text()
    assert '"POST /v1beta/models/openai-agent:streamGenerateContent?alt=sse"' in access_log
    written = {
        "access log": access_log,
        "log": daphne.log(),
        "database": b"".join(
            path.read_bytes() for path in Path(daphne.workdir).glob("gateway.sqlite3*")
        ).decode("latin-1"),
    }
    assert '"path":"/v1beta/models/openai-agent:generateContent"' in written["log"]
    assert [where for where, text in written.items() if key in text] == []
