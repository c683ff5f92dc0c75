"""``/v1/files`` (docs/files.md): a user's files, uploaded as multipart, listed, read and
deleted. A file is its uploader's: another user's id is as unknown. The multipart body
is parsed, and the bytes written and read, off the event loop."""

import asyncio
import uuid
from typing import Literal

from django.http import HttpResponse
from django.http.multipartparser import MultiPartParserError
from django.utils import timezone

from core.bodylimit import MIB
from inference.database import in_database
from inference.dialects.files.wire import PURPOSES, deleted, file_list, file_object
from inference.files import records, storage
from inference.files.media import media_type_of
from inference.models import StoredFile
from inference.neutral.errors import ApiError, invalid_request
from inference.serving.context import InferenceRequest
from inference.serving.owner import owner
from inference.serving.routes import dialect_api
from inference.serving.serve import json_response

api = dialect_api("files", lambda path: "file and purpose")
MAX_LIST = 10_000


@api.post("/v1/files")
async def upload(request: InferenceRequest) -> HttpResponse:
    started = timezone.now()
    config, user = owner(request)
    try:
        form, uploads = await asyncio.to_thread(lambda: (request.POST, request.FILES))
    except MultiPartParserError as error:
        raise invalid_request(
            f"The body is not a readable multipart/form-data form: {error}",
            code="invalid_multipart",
        ) from error
    purpose = form.get("purpose")
    if purpose not in PURPOSES:
        raise invalid_request(
            f"purpose must be one of {', '.join(PURPOSES)}", param="purpose", code="invalid_value"
        )
    upload = uploads.get("file")
    if upload is None:
        raise invalid_request("file is required (multipart/form-data)", param="file")
    limit = int(config.files.max_file_mb * MIB)
    if upload.size is None or upload.size > limit:
        raise ApiError(
            413,
            f"The file is larger than files.max_file_mb ({limit} bytes)",
            param="file",
            code="file_too_large",
        )
    data = await asyncio.to_thread(upload.read)
    filename = (upload.name or "file")[:255]
    row = StoredFile(
        id=f"file-{uuid.uuid4().hex[:24]}",
        user_id=user,
        filename=filename,
        purpose=purpose,
        media_type=media_type_of(filename, upload.content_type or "", data[:8]),
        bytes=len(data),
    )
    folder = storage.folder_of(config)
    await asyncio.to_thread(storage.save, folder, row.id, data)
    try:
        total = config.files.max_total_mb
        await in_database(
            records.add_file,
            row,
            int(config.files.max_user_mb * MIB),
            started,
            int(total * MIB) if total is not None else None,
        )
    except BaseException:
        await asyncio.to_thread(storage.remove, folder, [row.id])
        raise
    return json_response(file_object(row))


@api.get("/v1/files")
async def list_files(
    request: InferenceRequest,
    limit: int = MAX_LIST,
    after: str | None = None,
    order: Literal["asc", "desc"] = "desc",
    purpose: str | None = None,
) -> HttpResponse:
    _, user = owner(request)
    if not 1 <= limit <= MAX_LIST:
        raise invalid_request(
            f"limit must be between 1 and {MAX_LIST}", param="limit", code="invalid_value"
        )
    rows, has_more = await in_database(records.page_of_files, user, limit, after, order, purpose)
    return json_response(file_list(rows, has_more))


@api.get("/v1/files/{file_id}")
async def retrieve_file(request: InferenceRequest, file_id: str) -> HttpResponse:
    _, user = owner(request)
    return json_response(file_object(await _file(user, file_id)))


@api.get("/v1/files/{file_id}/content")
async def file_content(request: InferenceRequest, file_id: str) -> HttpResponse:
    config, user = owner(request)
    row = await _file(user, file_id)
    data = await asyncio.to_thread(storage.read, storage.folder_of(config), row.id)
    return HttpResponse(data, content_type=row.media_type)


@api.delete("/v1/files/{file_id}")
async def delete_file(request: InferenceRequest, file_id: str) -> HttpResponse:
    config, user = owner(request)
    if not await in_database(records.delete_file, user, file_id):
        raise _not_found(file_id)
    await asyncio.to_thread(storage.remove, storage.folder_of(config), [file_id])
    return json_response(deleted(file_id))


async def _file(user: str, file_id: str) -> StoredFile:
    row = await in_database(records.file_of, user, file_id)
    if row is None:
        raise _not_found(file_id)
    return row


def _not_found(file_id: str) -> ApiError:
    return ApiError(404, f"No such file: {file_id}", param="file_id", code="file_not_found")
