"""Django's own middleware, run on the event loop instead of a worker thread.

Under ASGI, Django wraps each hook of a ``MiddlewareMixin`` middleware in
``sync_to_async``: a thread hop for ``process_request``, ``process_view`` and
``process_response`` on every request, whatever the path. The hooks of the middleware
below only look at the request and set headers or cookies (the session is a signed
cookie, no store behind it), so they run inline.
"""

from collections.abc import Awaitable, Callable
from typing import Any, cast

from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.http import HttpRequest, HttpResponseBase
from django.middleware.common import CommonMiddleware as DjangoCommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware as DjangoCsrfViewMiddleware
from django.middleware.security import SecurityMiddleware as DjangoSecurityMiddleware
from django.utils.deprecation import MiddlewareMixin


class InlineMiddlewareMixin(MiddlewareMixin):
    """The async path of ``MiddlewareMixin`` with its hooks called directly."""

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        response = None
        if hasattr(self, "process_request"):
            response = self.process_request(request)
        # Under ASGI get_response is the async chain's next handler.
        response = response or await cast(Awaitable[HttpResponseBase], self.get_response(request))
        if hasattr(self, "process_response"):
            response = self.process_response(request, response)
        return response


class SecurityMiddleware(InlineMiddlewareMixin, DjangoSecurityMiddleware):
    pass


class CommonMiddleware(InlineMiddlewareMixin, DjangoCommonMiddleware):
    pass


class SessionMiddleware(InlineMiddlewareMixin, DjangoSessionMiddleware):
    pass


class CsrfViewMiddleware(InlineMiddlewareMixin, DjangoCsrfViewMiddleware):
    async def process_view(  # type: ignore[override]
        self,
        request: HttpRequest,
        callback: Callable[..., Any],
        callback_args: tuple[Any, ...],
        callback_kwargs: dict[str, Any],
    ) -> HttpResponseBase | None:
        """A coroutine, so that the handler awaits it rather than hopping to a thread."""
        return super().process_view(request, callback, callback_args, callback_kwargs)
