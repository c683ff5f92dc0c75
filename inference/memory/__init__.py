"""Long-term memory per user and agent: embedding texts, the stored facts and their
vectors, recall before a turn, extraction after it, memories added by hand."""
