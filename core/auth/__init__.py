"""Who a request says it is: HTTP Basic pairs, OpenID Connect tokens, and the principal
both surfaces read from an ``Authorization`` header."""
