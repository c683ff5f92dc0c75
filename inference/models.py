"""What the gateway records: conversation history and the token ledger."""

from django.db import models
from django.utils import timezone


class StoredMessage(models.Model):
    """One turn of a user's conversation with the ``model`` name the client asked for."""

    user_id = models.CharField(max_length=255)
    model = models.CharField(max_length=255)
    role = models.CharField(max_length=16)
    content = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["user_id", "model", "id"], name="history_lookup")]


class LedgerEntry(models.Model):
    """Tokens billed to a user for one upstream call."""

    user_id = models.CharField(max_length=255)
    agent = models.CharField(max_length=255)
    experiment = models.CharField(max_length=255, blank=True, default="")
    variant = models.CharField(max_length=255, blank=True, default="")
    provider = models.CharField(max_length=32)
    completion_id = models.CharField(max_length=64)
    prompt_tokens = models.PositiveIntegerField()
    completion_tokens = models.PositiveIntegerField()
    total_tokens = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["user_id", "created_at"], name="ledger_window")]
