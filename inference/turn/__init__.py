"""A request's turn: who it is for, its options and prompt, its preparation, the runner
that owns it, what it records, and what follows the reply (judges, shadows)."""
