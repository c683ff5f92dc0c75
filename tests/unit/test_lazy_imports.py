"""Libraries a process loads only when its config or its requests need them (each is a MB
or more of every worker's memory): joserfc for OpenID Connect, the OpenTelemetry SDK for an
exporter, genai-prices for a price from its table, jsonschema and RE2 for a JSON Schema,
Presidio (and spaCy, 100 MB) for a pii guardrail's first check, numpy for a memory recall
or an evaluation's summary, pypdf for a PDF's text, langcodes for a reply language,
croniter for a schedule, the admin's pages for a path under /admin; httpx's command line
(rich, pygments) never."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.loader import load_config_data
from inference.money.prices import price_of
from inference.neutral.types import Usage

ROOT = Path(__file__).resolve().parents[2]
OPTIONAL = (
    "joserfc",
    "opentelemetry.sdk",
    "genai_prices",
    "jsonschema",
    "re2",
    "mcp.server",
    "presidio_analyzer",
    "numpy",
    "pypdf",
    "langcodes",
    "croniter",
    "rich",
    "pygments",
    "adminui.api",
)
TABLE = "genai_prices.data"  # the price table, loaded by the first price looked up in it
CONFIG = """\
providers: {openai: {api_key: sk-test, base_url: 'http://127.0.0.1:9/v1'}}
agents: [{name: a, provider: openai, model: m, deployments: [{provider: openai, model: m}]}]
pricing: {"openai/m": {input: 0.4, output: 1.6}}
auth: {proxy: {api_keys: true}}
"""
LOADED = """
import asyncio, json, os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "gateway.settings"
import gateway.asgi, gateway.urls
from gateway import runtime
asyncio.run(runtime.current().started())  # waits for the thread pool (the price look-up)
%s
print(json.dumps({name: name in sys.modules for name in %r}))
"""


def loaded_after_start(workdir: Path, config: str, then: str = "") -> dict[str, bool]:
    """Which of the optional libraries are loaded once the process has started with
    ``config`` and run the Python statements ``then``."""
    (workdir / "gateway.yaml").write_text(config)
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "GATEWAY_CONFIG": "gateway.yaml"}
    environment.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    environment.pop("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", None)
    run = subprocess.run(
        [sys.executable, "-c", LOADED % (then, (*OPTIONAL, TABLE))],
        cwd=workdir,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(run.stdout.splitlines()[-1])


def test_a_process_without_oidc_exporter_table_prices_or_schemas_loads_none_of_them(
    tmp_path: Path,
) -> None:
    assert loaded_after_start(tmp_path, CONFIG) == dict.fromkeys((*OPTIONAL, TABLE), False)


def test_an_exporter_loads_the_sdk_and_a_table_price_loads_the_table_as_the_config_applies(
    tmp_path: Path,
) -> None:
    config = CONFIG.replace('pricing: {"openai/m": {input: 0.4, output: 1.6}}\n', "")
    config = config.replace("model: m,", "model: gpt-4.1-mini,")
    config += "telemetry: {otlp_endpoint: 'http://127.0.0.1:9'}\n"

    loaded = loaded_after_start(tmp_path, config)

    assert loaded["opentelemetry.sdk"] and loaded["genai_prices"] and loaded[TABLE]


def test_a_pii_guardrail_loads_presidio_as_the_config_applies(tmp_path: Path) -> None:
    config = CONFIG.replace("model: m,", "model: m, guardrails: [pii],")
    config += "guardrails: [{name: pii, kind: pii, action: redact}]\n"

    loaded = loaded_after_start(tmp_path, config)

    assert loaded["presidio_analyzer"]


def test_a_path_under_admin_loads_the_admins_pages(tmp_path: Path) -> None:
    loaded = loaded_after_start(
        tmp_path, CONFIG, "from django.urls import resolve; resolve('/admin/keys')"
    )

    assert loaded["adminui.api"]


@pytest.mark.parametrize("prompt_tokens", [1_000, 300_000])
def test_a_price_tiered_by_prompt_size_is_the_tables_own(prompt_tokens: int) -> None:
    from genai_prices import Usage as PricedUsage
    from genai_prices import calc_price

    config = load_config_data(
        {
            "providers": {"gemini": {"api_key": "k"}},
            "agents": [{"name": "a", "provider": "gemini", "model": "gemini-2.5-pro"}],
        }
    )
    usage = Usage(prompt_tokens=prompt_tokens, completion_tokens=500)
    expected = calc_price(
        PricedUsage(input_tokens=prompt_tokens, output_tokens=500),
        "gemini-2.5-pro",
        provider_id="google",
    ).total_price

    price = price_of(config, "gemini", "gemini-2.5-pro")

    assert price is not None and price.tiered is not None
    assert price.cost(usage) == round(float(expected) * 1_000_000)
