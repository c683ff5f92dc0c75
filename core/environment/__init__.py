"""The Python environment the gateway runs in, as Django's system checks see it (registered
by ``core.environment.apps``)."""
