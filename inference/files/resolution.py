"""Files named in a request, made into what models take (docs/files.md): a gateway file id
becomes its bytes (the uploader's only: another user's id is as unknown), an image file
an image, a text-like file a document with its text, a PDF a document with, where an
agent's provider takes no documents, its text as pypdf reads it (``extraction``: within
``files.max_pdf_pages`` and ``files.max_text_mb``; an uploaded file's is read once and
kept beside it). Runs on a thread: it reads files and PDFs."""

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from agents.schema import FilesConfig
from inference.files import records, storage
from inference.files.extraction import TextBounds, decoded, pdf_text
from inference.files.media import kind_of, supported
from inference.neutral.errors import invalid_request
from inference.neutral.types import Document, Image, Message, Part


@dataclass(frozen=True)
class LoadedFile:
    filename: str
    media_type: str
    data: bytes
    folder: Path  # where it is kept (its text too)
    file_id: str


def file_ids_of(messages: Sequence[Message]) -> list[str]:
    return [
        part.file_id
        for message in messages
        for part in message.parts
        if isinstance(part, Document) and part.file_id is not None
    ]


def load_files(user_id: str, file_ids: Sequence[str], folder: Path) -> dict[str, LoadedFile]:
    """The user's files among ``file_ids``, with their bytes (on a database thread)."""
    rows = records.files_of(user_id, file_ids)
    return {
        file_id: LoadedFile(
            row.filename, row.media_type, storage.read(folder, file_id), folder, file_id
        )
        for file_id, row in rows.items()
    }


def resolve_documents(
    messages: tuple[Message, ...],
    files: dict[str, LoadedFile],
    with_text: bool,
    provider: str,
    limits: FilesConfig,
) -> tuple[Message, ...]:
    """``messages`` with every document made whole; ``with_text``: a PDF's text is read
    too (a provider of the agent takes no documents). ``provider`` names the agent's in a
    refusal; ``limits`` bound the text read of a file."""
    bounds = TextBounds.of(limits)
    return tuple(
        replace(
            message,
            parts=tuple(
                _resolved(part, files, with_text, provider, bounds) for part in message.parts
            ),
        )
        if any(isinstance(part, Document) for part in message.parts)
        else message
        for message in messages
    )


def _resolved(
    part: Part,
    files: dict[str, LoadedFile],
    with_text: bool,
    provider: str,
    bounds: TextBounds,
) -> Part:
    if not isinstance(part, Document):
        return part
    loaded = None
    if part.file_id is not None:
        loaded = files.get(part.file_id)
        if loaded is None:
            raise invalid_request(
                f"{part.where}: there is no file {part.file_id!r} of this user",
                param=part.where,
                code="invalid_file",
            )
        filename, media_type, data = loaded.filename, loaded.media_type, loaded.data
    else:
        filename, media_type, data = part.filename, part.media_type, _bytes(part)
    kind = kind_of(media_type)
    if kind is None:
        raise invalid_request(
            f"{part.where}: the file {filename!r} ({media_type}) cannot be sent to a model of "
            f"provider '{provider}': it takes {supported()}",
            param=part.where,
            code="unsupported_file_type",
        )
    encoded = part.data or base64.b64encode(data).decode()
    if kind == "image":
        return Image(f"data:{media_type};base64,{encoded}")
    text = None
    if kind == "text":
        text = decoded(data, bounds)
    elif with_text:
        text = _pdf_text(data, loaded, bounds)
    return replace(
        part, filename=filename, media_type=media_type, data=encoded, file_id=None, text=text
    )


def _pdf_text(data: bytes, loaded: LoadedFile | None, bounds: TextBounds) -> str | None:
    """A PDF's text within ``bounds``: an uploaded file's is read once and kept beside
    it, for every later request (a file given inline is read each time)."""
    if loaded is None:
        return pdf_text(data, bounds)
    kept = storage.kept_text(loaded.folder, loaded.file_id, bounds.key)
    if kept is None:
        kept = pdf_text(data, bounds) or ""
        storage.keep_text(loaded.folder, loaded.file_id, bounds.key, kept)
    return kept or None


def _bytes(part: Document) -> bytes:
    try:
        return base64.b64decode(part.data, validate=True)
    except (binascii.Error, ValueError) as error:
        raise invalid_request(
            f"{part.where}: the file's data is not valid base64",
            param=part.where,
            code="invalid_file",
        ) from error
