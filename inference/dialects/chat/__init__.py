"""OpenAI's chat completions API and model list: routes, the body and its reader, the
reply writer. Its error shape (OpenAI's) and credentials (a bearer token) are the
serving path's defaults."""
