"""Anthropic's Message Batches: ``/v1/messages/batches`` (docs/batches.md)."""
