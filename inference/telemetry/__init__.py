"""Traces and GenAI metrics: spans of a request, the only place span attribute names are
spelled, and the OTLP export."""
