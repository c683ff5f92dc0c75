"""Management commands for minted API keys."""
