"""The low-level pieces every app's request code shares: the async middleware base and
the one log line per request. It imports none of the project's apps."""
