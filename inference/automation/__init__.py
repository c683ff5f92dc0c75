"""Agents on their own (docs/automation.md): triggers (schedules, webhooks, start-up),
background tasks, smoke tests."""
