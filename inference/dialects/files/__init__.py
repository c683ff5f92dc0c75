"""OpenAI's Files API: ``/v1/files`` (docs/files.md)."""
