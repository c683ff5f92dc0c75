"""What stops a user's sign-in, or the use of their tokens, in words for whoever reads it:
the person in the browser, or the model in a tool result."""


class SignInFailed(Exception):
    """A step of the browser's round trip that cannot go on; ``status``: what the browser
    is answered."""

    status = 400


class InvalidLink(SignInFailed):
    """A connect link or a sign-in state that is not (or no longer) valid."""


class SignInRefused(SignInFailed):
    """The authorization server refused the user's sign-in, or the gateway's client."""

    status = 403


class AuthServerUnavailable(SignInFailed):
    """The MCP server's authorization server cannot be found, reached or understood."""

    status = 502
