"""Files named in a request, made into what models take (docs/files.md): a gateway file id
becomes its bytes (the uploader's only: another user's id is as unknown), an image file
an image, a text-like file a document with its text, a PDF a document with, where an
agent's provider takes no documents, its text as pypdf reads it. Runs on a thread: it
reads files and PDFs."""

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from inference.files import records, storage
from inference.files.extraction import decoded, pdf_text
from inference.files.media import kind_of, supported
from inference.neutral.errors import invalid_request
from inference.neutral.types import Document, Image, Message, Part


@dataclass(frozen=True)
class LoadedFile:
    filename: str
    media_type: str
    data: bytes


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
        file_id: LoadedFile(row.filename, row.media_type, storage.read(folder, file_id))
        for file_id, row in rows.items()
    }


def resolve_documents(
    messages: tuple[Message, ...],
    files: dict[str, LoadedFile],
    with_text: bool,
    provider: str,
) -> tuple[Message, ...]:
    """``messages`` with every document made whole; ``with_text``: a PDF's text is read
    too (a provider of the agent takes no documents). ``provider`` names the agent's in a
    refusal."""
    return tuple(
        replace(
            message,
            parts=tuple(_resolved(part, files, with_text, provider) for part in message.parts),
        )
        if any(isinstance(part, Document) for part in message.parts)
        else message
        for message in messages
    )


def _resolved(part: Part, files: dict[str, LoadedFile], with_text: bool, provider: str) -> Part:
    if not isinstance(part, Document):
        return part
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
    text = decoded(data) if kind == "text" else pdf_text(data) if with_text else None
    return replace(
        part, filename=filename, media_type=media_type, data=encoded, file_id=None, text=text
    )


def _bytes(part: Document) -> bytes:
    try:
        return base64.b64decode(part.data, validate=True)
    except (binascii.Error, ValueError) as error:
        raise invalid_request(
            f"{part.where}: the file's data is not valid base64",
            param=part.where,
            code="invalid_file",
        ) from error
