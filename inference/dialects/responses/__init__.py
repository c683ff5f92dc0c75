"""OpenAI's Responses API: ``POST /v1/responses`` and the routes of stored responses;
the body and its reader (items, namespace tools, text formats), the reply writer.
Errors in OpenAI's shape, credentials a bearer token."""
