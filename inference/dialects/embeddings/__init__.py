"""OpenAI's embeddings API: ``POST /v1/embeddings`` in front of the config's embedders,
its body, reader and list writer. Errors in OpenAI's shape, credentials a bearer
token."""
