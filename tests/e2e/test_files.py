"""Files through the real server: OpenAI's Files API with the official SDK (per user,
limits, erasure), and files in requests of every dialect, as each provider kind takes
them: a PDF natively to OpenAI, Anthropic and Gemini, as its extracted text to the others
(a real PDF made here, with a known sentence in it); text files as text; images as
images."""

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from fpdf import FPDF
from google import genai
from google.genai import types as genai_types

from tests.fakes.base import FakeUpstream, Reply
from tests.server import GatewayServer
from tests.upstreams import FAKE_CLASSES, shared_config

SENTENCE = "The treasure is buried under the old oak tree."
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
NATIVE = ("openai", "anthropic", "gemini")
AS_TEXT = tuple(kind for kind in FAKE_CLASSES if kind not in NATIVE)  # groq, deepseek, cohere


def pdf_with(sentence: str) -> bytes:
    document = FPDF()
    document.add_page()
    document.set_font("Helvetica", size=12)
    document.cell(text=sentence)
    return bytes(document.output())


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    config = shared_config(upstreams)
    openai_url = upstreams["openai"].url
    config = config.replace(
        "providers:\n",
        f"providers:\n  plain: {{kind: openai, api_key: k, base_url: '{openai_url}', "
        "documents: false, retries: {attempts: 0}}\n",
        1,
    ).replace(
        "agents:\n",
        "agents:\n  - {name: text-only, provider: plain, model: text-only-model}\n",
        1,
    )
    config += "files: {dir: uploads, max_file_mb: 0.5, max_user_mb: 1}\n"
    gateway = GatewayServer(tmp_path_factory.mktemp("files"), config).start()
    yield gateway
    gateway.stop()


def client_for(server: GatewayServer, user: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{server.url}/v1",
        api_key="any",
        max_retries=0,
        default_headers={"X-User-Id": user},
    )


def upload(server: GatewayServer, user: str, name: str, data: bytes) -> str:
    created = client_for(server, user).files.create(file=(name, data), purpose="user_data")
    return created.id


def test_files_are_uploaded_listed_read_and_deleted_with_the_sdk(
    server: GatewayServer, user_id: str
) -> None:
    client = client_for(server, user_id)
    pdf = pdf_with(SENTENCE)

    created = client.files.create(file=("report.pdf", pdf), purpose="user_data")
    notes = client.files.create(
        file=("notes.md", b"# Notes\nBring a shovel."), purpose="assistants"
    )

    assert created.id.startswith("file-") and created.object == "file"
    assert (created.bytes, created.filename, created.purpose) == (
        len(pdf),
        "report.pdf",
        "user_data",
    )
    assert created.status == "processed"
    listed = client.files.list()
    assert [item.id for item in listed.data] == [notes.id, created.id]  # newest first
    first_page = client.files.list(limit=1, order="asc")
    assert [item.id for item in first_page.data] == [created.id] and first_page.has_more
    second_page = client.files.list(limit=1, order="asc", after=created.id)
    assert [item.id for item in second_page.data] == [notes.id]
    assert [item.id for item in client.files.list(purpose="assistants").data] == [notes.id]
    assert client.files.retrieve(created.id).filename == "report.pdf"
    assert client.files.content(created.id).content == pdf

    deleted = client.files.delete(created.id)

    assert deleted.deleted and deleted.id == created.id
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(created.id)
    assert [item.id for item in client.files.list().data] == [notes.id]


def test_another_users_file_is_not_found_and_a_request_naming_it_is_a_400(
    server: GatewayServer, user_id: str
) -> None:
    mine = upload(server, user_id, "secret.txt", b"My secret plans.")
    other = client_for(server, f"{user_id}-other")

    with pytest.raises(openai.NotFoundError):
        other.files.retrieve(mine)
    with pytest.raises(openai.NotFoundError):
        other.files.content(mine)
    with pytest.raises(openai.NotFoundError):
        other.files.delete(mine)
    with pytest.raises(openai.BadRequestError) as refused:
        other.chat.completions.create(
            model="openai-agent",
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Read it."},
                        {"type": "file", "file": {"file_id": mine}},
                    ],
                }
            ],
        )
    assert refused.value.code == "invalid_file"
    assert refused.value.param == "messages[0].content[1]"
    assert client_for(server, user_id).files.retrieve(mine).id == mine


def test_a_file_over_the_limit_is_413_and_a_user_over_the_quota_is_400(
    server: GatewayServer, user_id: str
) -> None:
    client = client_for(server, user_id)

    with pytest.raises(openai.APIStatusError) as too_large:
        client.files.create(file=("big.txt", b"x" * 600_000), purpose="user_data")
    client.files.create(file=("one.txt", b"x" * 400_000), purpose="user_data")
    second = client.files.create(file=("two.txt", b"x" * 400_000), purpose="user_data")
    with pytest.raises(openai.BadRequestError) as over_quota:
        client.files.create(file=("three.txt", b"x" * 400_000), purpose="user_data")
    client.files.delete(second.id)
    client.files.create(file=("three.txt", b"x" * 400_000), purpose="user_data")

    assert too_large.value.status_code == 413
    assert too_large.value.code == "file_too_large"
    assert over_quota.value.code == "quota_exceeded"


def test_a_bad_upload_is_a_clear_400(server: GatewayServer, user_id: str) -> None:
    headers = {"X-User-Id": user_id}
    no_file = httpx.post(
        f"{server.url}/v1/files", data={"purpose": "user_data"}, headers=headers, timeout=10
    )
    bad_purpose = httpx.post(
        f"{server.url}/v1/files",
        data={"purpose": "holidays"},
        files={"file": ("a.txt", b"a")},
        headers=headers,
        timeout=10,
    )

    broken = httpx.post(
        f"{server.url}/v1/files",
        content=b'--nope\r\nContent-Disposition: form-data; name="file"\r\n\r\nx',
        headers={**headers, "Content-Type": "multipart/form-data; boundary=other"},
        timeout=10,
    )
    as_json = httpx.post(f"{server.url}/v1/files", json={"file": "x"}, headers=headers, timeout=10)

    assert no_file.status_code == 400 and no_file.json()["error"]["param"] == "file"
    assert bad_purpose.status_code == 400 and bad_purpose.json()["error"]["param"] == "purpose"
    assert broken.status_code == 400 and broken.json()["error"]["type"] == "invalid_request_error"
    assert as_json.status_code == 400 and as_json.json()["error"]["param"] == "purpose"


def ask_with_file(server: GatewayServer, user: str, agent: str, file_id: str) -> str:
    completion = client_for(server, user).chat.completions.create(
        model=agent,
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Where is the treasure?"},
                    {"type": "file", "file": {"file_id": file_id}},
                ],
            }
        ],
    )
    return completion.choices[0].message.content or ""


def sent_document(kind: str, body: dict[str, Any]) -> Any:
    """The document of the last user turn as ``kind``'s wire format carries it."""
    if kind == "anthropic":
        blocks = body["messages"][-1]["content"]
        return next(block for block in blocks if block["type"] == "document")
    if kind == "gemini":
        parts = body["contents"][-1]["parts"]
        return next(part for part in parts if "inlineData" in part)
    content = body["messages"][-1]["content"]
    return next(part for part in content if part["type"] == "file")


@pytest.mark.parametrize("kind", NATIVE)
def test_a_pdf_reaches_providers_with_document_input_as_a_document(
    kind: str, server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    pdf = pdf_with(SENTENCE)
    file_id = upload(server, user_id, "map.pdf", pdf)
    fakes[kind].script(Reply.of_text("Under the oak."))

    assert ask_with_file(server, user_id, f"{kind}-agent", file_id) == "Under the oak."

    document = sent_document(kind, fakes[kind].last.body)
    encoded = base64.b64encode(pdf).decode()
    if kind == "anthropic":
        assert document["source"] == {
            "type": "base64",
            "media_type": "application/pdf",
            "data": encoded,
        }
    elif kind == "gemini":
        assert document["inlineData"] == {"mimeType": "application/pdf", "data": encoded}
    else:
        assert document["file"] == {
            "filename": "map.pdf",
            "file_data": f"data:application/pdf;base64,{encoded}",
        }
    assert SENTENCE not in json.dumps(fakes[kind].last.body)  # the bytes, not their text


@pytest.mark.parametrize("kind", AS_TEXT)
def test_a_pdf_reaches_providers_without_document_input_as_its_text(
    kind: str, server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    file_id = upload(server, user_id, "map.pdf", pdf_with(SENTENCE))
    fakes[kind].script(Reply.of_text("Under the oak."))

    ask_with_file(server, user_id, f"{kind}-agent", file_id)

    user_turn = fakes[kind].last.body["messages"][-1]
    assert f"[map.pdf]\n{SENTENCE}" in json.dumps(user_turn["content"]).replace("\\n", "\n")


def test_documents_false_sends_an_openai_provider_the_text(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    file_id = upload(server, user_id, "map.pdf", pdf_with(SENTENCE))

    ask_with_file(server, user_id, "text-only", file_id)

    content = openai_fake.last.body["messages"][-1]["content"]
    assert isinstance(content, str) and SENTENCE in content and "Where is the treasure?" in content


def test_a_text_file_is_text_and_an_image_file_an_image_on_the_responses_api(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    notes = upload(server, user_id, "notes.md", b"# Notes\nBring a shovel.")
    picture = upload(server, user_id, "dot.png", PNG)

    client_for(server, user_id).responses.create(
        model="openai-agent",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What do I need?"},
                    {"type": "input_file", "file_id": notes},
                    {"type": "input_image", "file_id": picture},
                ],
            }
        ],
    )

    parts = openai_fake.last.body["messages"][-1]["content"]
    assert {"type": "text", "text": "[notes.md]\n# Notes\nBring a shovel."} in parts
    image = next(part for part in parts if part["type"] == "image_url")
    assert image["image_url"]["url"] == f"data:image/png;base64,{base64.b64encode(PNG).decode()}"


def test_a_messages_document_with_a_file_source_reaches_anthropic_as_base64(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    pdf = pdf_with(SENTENCE)
    file_id = upload(server, user_id, "map.pdf", pdf)
    claude = anthropic.Anthropic(
        base_url=server.url, api_key="any", max_retries=0, default_headers={"X-User-Id": user_id}
    )
    document = {
        "type": "document",
        "source": {"type": "file", "file_id": file_id},
        "title": "The map",
        "citations": {"enabled": True},
    }

    for kind in ("anthropic", "cohere"):
        claude.messages.create(
            model=f"{kind}-agent",
            max_tokens=100,
            messages=[{"role": "user", "content": [document, {"type": "text", "text": "Where?"}]}],
        )

    sent = sent_document("anthropic", fakes["anthropic"].last.body)
    assert sent["source"]["data"] == base64.b64encode(pdf).decode()
    assert (sent["title"], sent["citations"]) == ("The map", {"enabled": True})
    assert SENTENCE in json.dumps(fakes["cohere"].last.body["messages"][-1])


def test_a_file_no_model_takes_is_a_400_naming_it(server: GatewayServer, user_id: str) -> None:
    archive = upload(server, user_id, "bundle.zip", b"PK\x03\x04 not really a zip")

    with pytest.raises(openai.BadRequestError) as refused:
        ask_with_file(server, user_id, "openai-agent", archive)

    assert refused.value.code == "unsupported_file_type"
    assert "bundle.zip" in refused.value.message and "'openai'" in refused.value.message


def test_history_keeps_the_files_name_not_its_content(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    file_id = upload(server, user_id, "map.pdf", pdf_with(SENTENCE))
    ask_with_file(server, user_id, "openai-agent", file_id)

    history = httpx.get(
        f"{server.url}/admin/conversations",
        params={"user": user_id},
        headers={"Accept": "application/json"},
        timeout=10,
    ).json()["data"]

    (asked,) = [row["content"] for row in history if row["role"] == "user"]
    assert asked == "Where is the treasure?[file: map.pdf]"


def test_erasing_a_user_removes_their_files_bytes_from_disk(
    server: GatewayServer, user_id: str
) -> None:
    file_id = upload(server, user_id, "diary.txt", b"Dear diary.")
    stored = Path(server.workdir) / "uploads" / file_id
    assert stored.read_bytes() == b"Dear diary."

    erased = httpx.delete(f"{server.url}/admin/users/{user_id}", timeout=10)

    assert erased.status_code == 200, erased.text
    assert erased.json()["removed"]["files"] == 1
    assert not stored.exists()
    with pytest.raises(openai.NotFoundError):
        client_for(server, user_id).files.retrieve(file_id)


@pytest.mark.parametrize("kind", ["gemini", "cohere"])
def test_a_pdf_inline_in_a_gemini_request_reaches_every_provider(
    kind: str, server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    encoded = base64.b64encode(pdf_with(SENTENCE)).decode()
    body = {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "Where is the treasure?"},
                    {"inlineData": {"mimeType": "application/pdf", "data": encoded}},
                ],
            }
        ]
    }

    response = httpx.post(
        f"{server.url}/v1beta/models/{kind}-agent:generateContent",
        json=body,
        headers={"X-User-Id": user_id},
        timeout=30,
    )

    assert response.status_code == 200, response.text
    sent = json.dumps(fakes[kind].last.body)
    assert (encoded in sent, SENTENCE in sent) == (
        (True, False) if kind == "gemini" else (False, True)
    )


@pytest.mark.parametrize("kind", ["openai", "anthropic", "cohere"])
def test_google_genais_url_safe_base64_reaches_every_provider_as_standard_base64(
    kind: str, server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """``Part.from_bytes`` sends URL-safe base64 (``-`` and ``_``), which Google takes;
    providers get the standard alphabet, padded."""
    pdf = pdf_with(SENTENCE)
    for data in (pdf, PNG):  # each has characters the two alphabets spell differently
        assert {"+", "/"} & set(base64.b64encode(data).decode())
    fakes[kind].script(Reply.of_text("Under the oak."))
    options = genai_types.HttpOptions(
        base_url=server.url, api_version="v1beta", headers={"X-User-Id": user_id}
    )
    client = genai.Client(api_key="any", http_options=options)

    reply = client.models.generate_content(
        model=f"{kind}-agent",
        contents=[
            genai_types.Part.from_bytes(data=pdf, mime_type="application/pdf"),
            genai_types.Part.from_bytes(data=PNG, mime_type="image/png"),
            "Where is the treasure?",
        ],
    )

    assert reply.text == "Under the oak."
    sent = json.dumps(fakes[kind].last.body)
    assert base64.b64encode(PNG).decode() in sent
    if kind == "cohere":
        assert SENTENCE in sent
    else:
        assert base64.b64encode(pdf).decode() in sent


def test_a_chat_file_part_may_carry_its_data(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    encoded = base64.b64encode(pdf_with(SENTENCE)).decode()
    client_for(server, user_id).chat.completions.create(
        model="deepseek-agent",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Where?"},
                    {
                        "type": "file",
                        "file": {
                            "file_data": f"data:application/pdf;base64,{encoded}",
                            "filename": "inline.pdf",
                        },
                    },
                ],
            }
        ],
    )

    assert f"[inline.pdf]\\n{SENTENCE}" in json.dumps(fakes["deepseek"].last.body)
