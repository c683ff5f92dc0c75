"""Config files the tests load, in the original service's format (see each file's header)."""

from pathlib import Path

CONFIGS = Path(__file__).resolve().parent
ORIGINAL_EXAMPLE = CONFIGS / "original_example.yaml"
ORIGINAL_STARTER = CONFIGS / "original_starter.yaml"
