"""What the gateway changes of daphne, its server, in the daphne process (``gateway.asgi``
imports them): request bodies as they came (``forms``), a stopping worker that takes no
new work (``draining``), an access log without credentials (``access_log``)."""
