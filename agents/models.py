"""The ORM mirror of the config file: every version the gateway applied."""

from django.db import models
from django.utils import timezone


class ConfigRevision(models.Model):
    """One applied version of the config file: history and audit, never a source of truth."""

    created_at = models.DateTimeField(default=timezone.now)
    author = models.CharField(max_length=255)  # who wrote it through the admin, or "file edit"
    text = models.TextField()  # the whole file, secrets included (needed to restore it)
    diff = models.TextField(blank=True)  # unified diff from the previous revision, secrets masked
    etag = models.CharField(max_length=40)  # of the file's bytes, as /admin/config reports it

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"revision {self.pk} by {self.author}"
