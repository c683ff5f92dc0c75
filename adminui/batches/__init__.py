"""The admin's page of batches (docs/batches.md)."""
