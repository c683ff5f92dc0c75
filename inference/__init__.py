"""The API of the gateway: every dialect's requests turned into turns of the config's
agents, the calls those make upstream, and what they cost and leave behind."""
