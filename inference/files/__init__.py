"""Files users upload (``/v1/files``, docs/files.md): kept per user, and given to the
models of a request that names them."""
