"""Money, in one place: prices, admission (token and USD budgets, API key limits, the
reservation a request holds) and settlement (the ledger row of every call the gateway
pays for, whoever made it)."""
