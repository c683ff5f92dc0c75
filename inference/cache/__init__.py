"""The response cache (docs/caching.md): complete replies of model calls kept per agent and
scope, so that the same call (or, semantic, a similar one) is answered without the
upstream."""
