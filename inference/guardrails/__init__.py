"""Guardrails (docs/guardrails.md): checks on what goes to the models and comes back, as
one layer of the model-call seam (``inference.guardrails.calls``)."""
