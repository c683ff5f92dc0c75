"""What ``/v1`` request code borrows from the process, as the request carries it."""

from typing import Protocol

from django.http import HttpRequest

from agents.snapshot import ConfigHolder
from core.requestlog import RequestLog
from inference.providers.registry import ProviderClients


class InferenceRuntime(Protocol):
    holder: ConfigHolder
    providers: ProviderClients


class InferenceRequest(HttpRequest):
    """A request as the context middleware hands it to the ``/v1`` views."""

    runtime: InferenceRuntime
    log: RequestLog
