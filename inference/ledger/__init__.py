"""Storage of what the gateway records: history, stored responses, request records, the
record writer that commits them in groups, erasing a user, the admin's read queries."""
