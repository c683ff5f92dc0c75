"""Real MCP servers for the tests, written with the SDK."""

from pathlib import Path

GREETER = Path(__file__).resolve().parent / "greeter.py"
