"""What a file may cost a request (docs/files.md), through the real server: a PDF's text
for a provider that takes no documents is read within ``files.max_pdf_pages`` and
``files.max_text_mb`` (the rest cut, with a line saying so), once per file (kept beside
it), and a call whose body would pass ``limits.max_upstream_body_mb`` is a 413 before it
is made."""

import json
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from fpdf import FPDF

from tests.e2e.test_files import client_for
from tests.fakes.base import FakeUpstream, Reply
from tests.server import GatewayServer
from tests.upstreams import shared_config

PAGES = 5
LINE = "The treasure is buried under the old oak tree, page {page}, line {line}. "
MAX_TEXT_CHARACTERS = int(0.01 * 1024 * 1024)  # files.max_text_mb: 0.01


def long_pdf() -> bytes:
    """``PAGES`` pages of about 4,000 characters each: more text than the test's bound."""
    document = FPDF()
    document.set_font("Helvetica", size=6)
    for page in range(1, PAGES + 1):
        document.add_page()
        for line in range(1, 61):
            document.cell(text=LINE.format(page=page, line=line), new_x="LMARGIN", new_y="NEXT")
    return bytes(document.output())


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    config = shared_config(upstreams)
    config += "files: {dir: uploads, max_pdf_pages: 3, max_text_mb: 0.01}\n"
    config += "limits: {max_upstream_body_mb: 0.05}\n"
    gateway = GatewayServer(tmp_path_factory.mktemp("files-bounds"), config).start()
    yield gateway
    gateway.stop()


def ask_with_file(server: GatewayServer, user: str, file_id: str) -> None:
    client_for(server, user).chat.completions.create(
        model="deepseek-agent",
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


def sent_text(fake: FakeUpstream) -> str:
    content = fake.last.body["messages"][-1]["content"]
    return content if isinstance(content, str) else json.dumps(content)


def test_a_pdfs_text_is_read_within_the_bounds_and_says_what_it_left_out(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes["deepseek"]
    fake.script(Reply.of_text("Under the oak."))
    uploaded = client_for(server, user_id).files.create(
        file=("map.pdf", long_pdf()), purpose="user_data"
    )

    ask_with_file(server, user_id, uploaded.id)

    text = sent_text(fake)
    assert "page 1, line 1." in text
    assert "page 4" not in text and "page 5" not in text
    assert f"The PDF has {PAGES} pages; the text of the first 3 is read" in text
    assert "The text is cut here: it is longer than 0.01 MiB (files.max_text_mb)" in text
    assert len(text) < MAX_TEXT_CHARACTERS + 1000  # the text, its name and the two lines


def test_a_pdfs_text_is_read_once_and_kept_beside_it(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes["deepseek"]
    fake.script(Reply.of_text("Under the oak."), Reply.of_text("Still there."))
    uploaded = client_for(server, user_id).files.create(
        file=("map.pdf", long_pdf()), purpose="user_data"
    )
    ask_with_file(server, user_id, uploaded.id)
    (kept,) = (Path(server.workdir) / "uploads").glob(f"{uploaded.id}.*.txt")
    assert "page 1, line 1." in kept.read_text()
    kept.write_text("What was read the first time.")

    ask_with_file(server, user_id, uploaded.id)

    assert "What was read the first time." in sent_text(fake)  # not read again
    client_for(server, user_id).files.delete(uploaded.id)
    assert not kept.exists()


def test_a_call_whose_body_would_pass_the_upstream_limit_is_413_before_it_is_made(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes["deepseek"]

    with pytest.raises(openai.APIStatusError) as refused:
        client_for(server, user_id).chat.completions.create(
            model="deepseek-agent", messages=[{"role": "user", "content": "x" * 60_000}]
        )

    assert refused.value.status_code == 413
    error = refused.value.body
    assert isinstance(error, dict) and error["code"] == "request_too_large"
    assert "limits.max_upstream_body_mb" in error["message"]
    assert fake.requests == []
