"""The text of a PDF (pypdf), for providers that take no documents; CPU work, run off the
event loop by its callers."""

import io
import logging

from pypdf import PdfReader
from pypdf.errors import PyPdfError

logger = logging.getLogger("gateway.files")


def pdf_text(data: bytes) -> str | None:
    """The text of every page, pages apart by a blank line (None: not a readable PDF,
    or a PDF of images only)."""
    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, OSError) as error:
        logger.warning("a PDF's text could not be read: %s", error)
        return None
    text = "\n\n".join(page.strip() for page in pages if page.strip())
    return text or None


def decoded(data: bytes) -> str:
    """A text file's text (UTF-8, undecodable bytes replaced)."""
    return data.decode("utf-8", errors="replace")
