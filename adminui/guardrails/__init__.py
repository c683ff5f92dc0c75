"""The admin's view of what guardrails did."""
