"""The serving path every dialect shares: what a request carries, the ``Dialect`` record
each dialect folder registers, credentials, the OpenAI error shape, and the one way a
turn is answered (``serve``)."""
