"""The Anthropic Messages API: ``POST /v1/messages`` and ``count_tokens``; the body and
its reader (blocks, tool results, thinking), the reply writer, Anthropic's error shape,
and ``x-api-key`` credentials."""
