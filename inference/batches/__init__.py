"""Batches (docs/batches.md): requests sent as a file or a list, run in the background
as their caller's, below live traffic."""
