"""Reading what each provider with ``billing`` billed over some days: one ``GET`` per
page of its billing API at its ``base_url``, every provider at once, each bounded in
time. A provider that fails yields its error (never its keys) and fails no other."""

import asyncio
import logging
from dataclasses import dataclass
from datetime import date
from typing import Any

import httpx

from agents import masking
from agents.schema import Config
from core.providerkinds import PROVIDER_KINDS
from inference.reconciliation.anthropic_costs import AnthropicCostReport
from inference.reconciliation.bills import (
    BilledLine,
    BillingApi,
    BillingError,
    BillRequest,
    billing_providers,
)
from inference.reconciliation.openai_costs import OpenAICosts

# The billing API of each provider kind that bills (core.providerkinds).
APIS: dict[str, BillingApi] = {"openai": OpenAICosts(), "anthropic": AnthropicCostReport()}
FETCH_SECONDS = 60.0  # the longest one provider's pages may take, all of them
MAX_PAGES = 100
MAX_ERROR = 500  # characters of a provider's own error message kept
_TIMEOUT = httpx.Timeout(30.0, connect=10.0)
logger = logging.getLogger("gateway.reconciliation")


@dataclass(frozen=True)
class Fetched:
    """What one provider's billing API answered: its lines, or why there are none."""

    provider: str
    lines: list[BilledLine] | None
    error: str = ""


async def fetch_all(config: Config, first: date, last: date) -> list[Fetched]:
    """Every billing provider's lines of the days ``first`` to ``last`` (UTC)."""
    async with httpx.AsyncClient(timeout=_TIMEOUT) as client:
        work = [_fetch(client, config, name, first, last) for name in billing_providers(config)]
        return list(await asyncio.gather(*work))


async def _fetch(
    client: httpx.AsyncClient, config: Config, name: str, first: date, last: date
) -> Fetched:
    settings = config.providers[name]
    hidden = masking.secrets({"providers": {name: settings.model_dump()}})
    try:
        async with asyncio.timeout(FETCH_SECONDS):
            lines = await _pages(client, config, name, first, last)
    except BillingError as error:
        return Fetched(name, None, masking.redact(str(error), hidden))
    except TimeoutError:
        return Fetched(name, None, f"no complete answer within {FETCH_SECONDS:g} s")
    except Exception as error:  # a bug here fails this provider's fetch, not the others'
        logger.exception("the fetch of %s's bill failed", name)
        return Fetched(name, None, f"internal error: {type(error).__name__}")
    return Fetched(name, lines)


async def _pages(
    client: httpx.AsyncClient, config: Config, name: str, first: date, last: date
) -> list[BilledLine]:
    settings = config.providers[name]
    billing = settings.billing
    assert billing is not None
    kind = config.provider_kind(name)
    api = APIS[kind]
    base_url = (settings.base_url or PROVIDER_KINDS[kind].base_url).rstrip("/")
    lines: list[BilledLine] = []
    page: str | None = None
    for _ in range(MAX_PAGES):
        request = api.request(base_url, billing, first, last, page)
        body = await _get(client, request)
        try:
            answer = api.read(body, billing)
        except BillingError as error:
            raise BillingError(f"GET {request.url} answered {error}") from error
        lines += answer.lines
        if answer.next_page is None:
            return lines
        page = answer.next_page
    raise BillingError(f"GET {base_url}: more than {MAX_PAGES} pages of costs")


async def _get(client: httpx.AsyncClient, request: BillRequest) -> Any:
    where = f"GET {request.url}"
    try:
        response = await client.get(request.url, params=request.params, headers=request.headers)
    except httpx.HTTPError as error:
        raise BillingError(f"{where}: {type(error).__name__}: {error}") from error
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code != 200:
        raise BillingError(f"{where} answered {response.status_code}: {_message(body, response)}")
    if not isinstance(body, dict):
        raise BillingError(f"{where} answered something other than JSON")
    return body


def _message(body: Any, response: httpx.Response) -> str:
    """The provider's own words for an error: ``error.message`` in both APIs' shapes."""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    text = str(message) if message else response.text or response.reason_phrase
    return text[:MAX_ERROR]
