"""A real OpenID provider on loopback for the auth tests: ``oidc-provider-mock`` served by
werkzeug on a free port, plus three test-only routes on the same app:

- ``POST /test/rotate-key``: the provider signs with a new key from now on (and publishes
  only that one), as a provider rotating its keys does;
- ``POST /test/sign``: a JWT with the claims of the JSON body, signed with the provider's
  current key (expired, wrong audience, wrong issuer tokens the provider itself signed);
- ``GET /test/jwks-fetches``: how often the JWKS was fetched.

``id_token`` runs the authorization code flow as a browser would (the provider's form
posts the subject) and returns the ID token the provider issued.
"""

import base64
import hashlib
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, urlparse

import flask
import httpx
import joserfc.jwk
import joserfc.jwt
import oidc_provider_mock
import werkzeug.serving


class IdentityProvider:
    def __init__(self, server: werkzeug.serving.BaseWSGIServer) -> None:
        self.server = server

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def rotate_key(self) -> None:
        httpx.post(f"{self.url}/test/rotate-key").raise_for_status()

    def sign(self, claims: dict[str, Any]) -> str:
        response = httpx.post(f"{self.url}/test/sign", json=claims)
        response.raise_for_status()
        return response.text

    def jwks_fetches(self) -> int:
        return int(httpx.get(f"{self.url}/test/jwks-fetches").text)

    def id_token(self, client_id: str, sub: str) -> str:
        """Log in as ``sub`` through the provider's form; the ID token it issues."""
        redirect_uri = "http://127.0.0.1/callback"
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "scope": "openid email",
            "state": "s",
            "nonce": "n",
            "code_challenge": challenge.decode().rstrip("="),
            "code_challenge_method": "S256",
        }
        authorized = httpx.post(f"{self.url}/oauth2/authorize", params=query, data={"sub": sub})
        code = parse_qs(urlparse(authorized.headers["Location"]).query)["code"][0]
        token = httpx.post(
            f"{self.url}/oauth2/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "client_id": client_id,
                "code_verifier": verifier,
            },
        )
        token.raise_for_status()
        return token.json()["id_token"]


def _app() -> flask.Flask:
    app: flask.Flask = oidc_provider_mock.app()
    fetches = {"jwks": 0}

    @app.before_request
    def count_jwks_fetches() -> None:
        if flask.request.path == "/jwks":
            fetches["jwks"] += 1

    @app.post("/test/rotate-key")
    def rotate_key() -> str:
        flask.g.oidc_provider_mock_storage.jwk = joserfc.jwk.RSAKey.generate_key(private=True)
        return ""

    @app.post("/test/sign")
    def sign() -> str:
        key = flask.g.oidc_provider_mock_storage.jwk
        key.ensure_kid()
        claims = {"iat": int(time.time()), **(flask.request.json or {})}
        return joserfc.jwt.encode({"alg": "RS256", "kid": key.kid}, claims, key)

    @app.get("/test/jwks-fetches")
    def jwks_fetches() -> str:
        return str(fetches["jwks"])

    return app


@contextmanager
def running_identity_provider() -> Iterator[IdentityProvider]:
    server = werkzeug.serving.make_server("127.0.0.1", 0, _app(), threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    try:
        yield IdentityProvider(server)
    finally:
        server.shutdown()
        thread.join(5)
        server.server_close()
