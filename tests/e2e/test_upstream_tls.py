"""Providers over HTTPS: the gateway checks each upstream's certificate against its trusted
certificates (the CA bundle, or ``SSL_CERT_FILE``), with one TLS context that every
provider's client shares."""

import ssl
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
import trustme

from tests.fakes.anthropic_upstream import AnthropicUpstream
from tests.fakes.base import FakeUpstream
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.server import GatewayServer
from tests.upstreams import fake_base_url


def serving(fake: FakeUpstream, ca: trustme.CA) -> FakeUpstream:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    return fake.over_tls(context).start()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai.OpenAI]:
    trusted, unknown = trustme.CA(), trustme.CA()
    fakes = {
        "openai": serving(OpenAIUpstream(), trusted),
        "anthropic": serving(AnthropicUpstream(), trusted),
        "stranger": serving(OpenAIUpstream(), unknown),
    }
    workdir = tmp_path_factory.mktemp("tls")
    bundle = workdir / "trusted.pem"
    trusted.cert_pem.write_to_path(str(bundle))
    providers = "\n".join(
        f"  {name}: {{kind: {'anthropic' if name == 'anthropic' else 'openai'}, api_key: k, "
        f"base_url: '{fake_base_url(fake)}', retries: {{attempts: 0}}}}"
        for name, fake in fakes.items()
    )
    agents = "\n".join(f"  - {{name: {name}, provider: {name}, model: m}}" for name in fakes)
    config = f"providers:\n{providers}\nagents:\n{agents}\n"
    server = GatewayServer(Path(workdir), config, extra_env={"SSL_CERT_FILE": str(bundle)})
    server.start()
    try:
        yield openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
    finally:
        server.stop()
        for fake in fakes.values():
            fake.stop()


@pytest.mark.parametrize("agent", ["openai", "anthropic"])
def test_providers_whose_certificates_are_trusted_answer_over_https(
    gateway: openai.OpenAI, agent: str
) -> None:
    reply = gateway.chat.completions.create(
        model=agent,
        messages=[{"role": "user", "content": "hello over TLS"}],
        safety_identifier="tls-user",
    )

    assert reply.choices[0].message.content == "You said: hello over TLS"


def test_an_upstream_whose_certificate_is_not_trusted_is_a_502_that_says_so(
    gateway: openai.OpenAI,
) -> None:
    with pytest.raises(openai.APIStatusError) as raised:
        gateway.chat.completions.create(
            model="stranger",
            messages=[{"role": "user", "content": "hello"}],
            safety_identifier="tls-user",
        )

    assert raised.value.status_code == 502
    assert "TLS certificate did not verify" in raised.value.message
