"""The MCP server's record: the path ``/mcp`` alone (``/mcp/{server}/…`` are the browser
routes of the MCP servers' OAuth); OpenAI's error shape for what fails before MCP
answers (credentials, body size); the key as a bearer token."""

import re

from inference.dialects.mcp.routes import api
from inference.serving.dialect import Dialect
from inference.serving.errors import openai_error

DIALECT = Dialect("mcp", (), api, openai_error, paths=re.compile(r"/mcp/?"))
