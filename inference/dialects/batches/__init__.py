"""OpenAI's Batch API: ``/v1/batches`` (docs/batches.md)."""
