"""Where a model call goes: which agent answers a name (experiments), the deployments and
fallbacks of a route, each call tried again and failed over (``Upstream``, routing's
``ModelCalls``), circuit breakers."""
