"""Spend reconciliation (docs/reconciliation.md): what each provider with ``billing``
billed per UTC day and model, read from its billing API, set beside what the ledger
computed for that provider's calls, once a day by one process and on demand."""
