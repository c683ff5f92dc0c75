"""``{% collection_url resource "read" key %}``: the admin URL of a collection's page."""

from django import template
from django.urls import reverse

from agents.resources import Resource

register = template.Library()


@register.simple_tag
def collection_url(resource: Resource, page: str = "", key: str | None = None) -> str:
    """The collection's list (no ``page``), or its ``new``, ``read`` or ``edit`` page."""
    name = f"admin:{resource.section}" + (f"_{page}" if page else "")
    return reverse(name, args=[key] if key is not None else [])
