"""What kind of file a file is, for the models: a PDF, text, an image, or something no
provider takes."""

import mimetypes
from typing import Literal

type FileKind = Literal["pdf", "text", "image"]

PDF = "application/pdf"
_TEXT_APPLICATIONS = {
    "application/json",
    "application/xml",
    "application/yaml",
    "application/x-yaml",
    "application/x-ndjson",
    "application/javascript",
    "application/sql",
}
_OPAQUE = {"", "application/octet-stream", "binary/octet-stream"}


def media_type_of(filename: str, given: str, head: bytes) -> str:
    """The file's media type: a PDF by its signature, else what the client said (unless it
    said nothing useful), else what the name suggests."""
    if head.startswith(b"%PDF-"):
        return PDF
    given = given.split(";")[0].strip().lower()
    if given not in _OPAQUE:
        return given
    guessed = mimetypes.guess_type(filename)[0]
    if guessed is None and filename.lower().endswith((".md", ".markdown")):
        guessed = "text/markdown"
    return guessed or "application/octet-stream"


def kind_of(media_type: str) -> FileKind | None:
    """How models may take a file of ``media_type`` (None: no provider takes it)."""
    if media_type == PDF:
        return "pdf"
    if media_type.startswith("image/"):
        return "image"
    if media_type.startswith("text/") or media_type in _TEXT_APPLICATIONS:
        return "text"
    return None


def supported() -> str:
    return "PDF, text (text/*, JSON, CSV, Markdown, XML, YAML) and images"
