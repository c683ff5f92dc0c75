"""Minting API keys through the admin, for the tests of what keys allow."""

import uuid
from typing import Any

import httpx

from tests.server import GatewayServer


def mint(server: GatewayServer, **fields: Any) -> dict[str, Any]:
    """A new key (the admin's 201 body) of a new user unless ``user`` is given."""
    body = {"name": "test key", "user": f"user-{uuid.uuid4().hex[:8]}", **fields}
    response = httpx.post(f"{server.url}/admin/keys", json=body, timeout=10)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created
