"""What API request code borrows from the process, as the request carries it."""

from typing import Any, Protocol

from django.http import HttpRequest

from agents.schema import LimitsConfig
from agents.snapshot import ConfigHolder
from core.requestlog import RequestLog
from inference.engine import Engine
from inference.money.keys import KeyGrant
from inference.serving.batchline import BatchLines
from inference.serving.dialect import Dialect
from inference.telemetry.spans import Span


class InferenceRuntime(Protocol):
    holder: ConfigHolder
    engine: Engine

    @property
    def openai_batch_lines(self) -> dict[str, BatchLines]:
        """What answers the lines of /v1/batches, by path (inference.dialects.registry)."""
        ...


class InferenceRequest(HttpRequest):
    """A request as the API middleware (``inference.api.middleware``) hands it to a
    dialect's views."""

    runtime: InferenceRuntime
    log: RequestLog
    dialect: Dialect  # the dialect whose path it is
    bound_user: str | None  # the principal, when auth.proxy.bind_user (ProxyAuthMiddleware)
    api_key: KeyGrant | None  # the minted key the request came with
    # A body over 1 MiB, parsed off the event loop (or the ValueError it raised); else None.
    parsed_body: Any
    span: Span  # the request's server span (NO_SPAN while tracing is off)


def limits_of(request: InferenceRequest) -> LimitsConfig:
    """The live config's limits (the defaults while no config is loaded: the request is
    refused with 503 when it is served)."""
    config = request.runtime.holder.config
    return config.limits if config is not None else LimitsConfig()
