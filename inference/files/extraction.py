"""The text of a file, for providers that take no documents: a PDF's as pypdf reads it,
a text file's as it is. CPU work, run off the event loop by its callers.

A PDF's text can be far larger than the PDF (a font may map one glyph to many
characters: a 432 KB PDF of 200 pages read as 80 MB of text), so reading is bounded:
at most ``files.max_pdf_pages`` pages and ``files.max_text_mb`` MiB of characters, the
reading of a page stopped as soon as it passes the rest of the budget; what is left out
is said in a line at the end.
"""

import io
import logging
from dataclasses import dataclass
from typing import Any

from agents.schema import FilesConfig
from core.bodylimit import MIB

logger = logging.getLogger("gateway.files")


@dataclass(frozen=True)
class TextBounds:
    """How much of a file's text is read: its first ``pages`` pages (a PDF's), at most
    ``characters`` characters (``megabytes`` MiB of them, as the config says)."""

    pages: int
    megabytes: float

    @classmethod
    def of(cls, files: FilesConfig) -> "TextBounds":
        return cls(files.max_pdf_pages, files.max_text_mb)

    @property
    def characters(self) -> int:
        return int(self.megabytes * MIB)

    @property
    def key(self) -> str:
        """What names text read within these bounds (a file's kept text)."""
        return f"{self.pages}p{self.characters}c"


class _Enough(Exception):
    """The text read so far fills the budget: the page's reading stops here."""


@dataclass
class _Page:
    """One page's text as pypdf hands it over, piece by piece, up to ``room`` characters."""

    room: int
    pieces: list[str]
    size: int = 0

    def visit(self, text: str, *context: Any) -> None:
        self.pieces.append(text)
        self.size += len(text)
        if self.size > self.room:
            raise _Enough


def pdf_text(data: bytes, bounds: TextBounds) -> str | None:
    """The text of the PDF's pages, apart by a blank line, within ``bounds`` (None: not
    a readable PDF, or a PDF of images only)."""
    # Loaded with the first PDF read, not in every process: pypdf and the Pillow it
    # imports are about 15 MB.
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        total = len(reader.pages)
        texts: list[str] = []
        used = 0
        full = False
        for page in reader.pages[: bounds.pages]:
            reading = _Page(bounds.characters - used, [])
            try:
                text = page.extract_text(visitor_text=reading.visit) or ""
            except _Enough:
                text, full = "".join(reading.pieces), True
            if text.strip():
                texts.append(text.strip())
                used += len(texts[-1]) + 2
            if full or used > bounds.characters:
                break
    except (PyPdfError, ValueError, OSError) as error:
        logger.warning("a PDF's text could not be read: %s", error)
        return None
    text = "\n\n".join(texts)
    if not text:
        return None
    notes = []
    if total > bounds.pages:
        notes.append(
            f"[The PDF has {total} pages; the text of the first {bounds.pages} is read "
            "(files.max_pdf_pages).]"
        )
    return bounded(text, bounds, notes)


def decoded(data: bytes, bounds: TextBounds) -> str:
    """A text file's text (UTF-8, undecodable bytes replaced), within ``bounds``."""
    return bounded(data[: bounds.characters * 4].decode("utf-8", errors="replace"), bounds, [])


def bounded(text: str, bounds: TextBounds, notes: list[str]) -> str:
    """``text`` cut to ``bounds.characters``, with a line saying so, and ``notes``."""
    if len(text) > bounds.characters:
        text = text[: bounds.characters]
        notes = [
            f"[The text is cut here: it is longer than {bounds.megabytes:g} MiB "
            "(files.max_text_mb).]",
            *notes,
        ]
    return "\n\n".join([text, *notes]) if notes else text
