"""``POST /v1/embeddings`` in front of the embedders of each wire format that serves them,
through the real server with the official SDK: shapes, encodings, dimensions, what each
provider is sent, billing to the user, and errors."""

import base64
import json
import math
import sqlite3
import struct
from typing import Any

import httpx
import openai
import pytest

from tests.fakes.base import FakeUpstream, Reply, fake_vector
from tests.fakes.openai_upstream import OpenAIUpstream, float32_embedding
from tests.frameworks import run_client
from tests.server import GatewayServer
from tests.upstreams import EMBEDDING_KINDS


def cosine(first: list[float], second: list[float]) -> float:
    dot = sum(a * b for a, b in zip(first, second, strict=True))
    return dot / (math.hypot(*first) * math.hypot(*second))


@pytest.mark.parametrize("kind", EMBEDDING_KINDS)
def test_texts_come_back_as_vectors_in_order_with_usage(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    texts = ["I work on the billing team", "the billing team is where I work", "pasta recipe"]

    answer = client.embeddings.create(model=f"{kind}-embedder", input=texts, user=user_id)

    assert answer.object == "list" and answer.model == f"{kind}-embedder"
    vectors = [item.embedding for item in answer.data]
    assert [item.index for item in answer.data] == [0, 1, 2]
    assert vectors == [pytest.approx(fake_vector(text)) for text in texts]
    assert cosine(vectors[0], vectors[1]) > 0.7 > 0.2 > cosine(vectors[0], vectors[2])
    assert answer.usage.prompt_tokens == answer.usage.total_tokens > 0
    (sent,) = fakes[kind].requests
    if kind == "openai":
        assert (sent.path, sent.body["input"]) == ("/v1/embeddings", texts)
    elif kind == "gemini":
        assert sent.path == "/v1beta/models/gemini-embedding-1:batchEmbedContents"
        assert [r["taskType"] for r in sent.body["requests"]] == ["RETRIEVAL_DOCUMENT"] * 3
    else:
        assert (sent.path, sent.body["input_type"]) == ("/v2/embed", "search_document")


@pytest.mark.parametrize("kind", EMBEDDING_KINDS)
def test_one_string_in_base64_with_dimensions(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """The SDK asks for base64 by default and decodes it itself."""
    answer = client.embeddings.create(
        model=f"{kind}-embedder", input="Prefers answers in French", dimensions=8, user=user_id
    )

    (item,) = answer.data
    assert item.embedding == pytest.approx(fake_vector("Prefers answers in French", 8), abs=1e-6)
    sent = fakes[kind].last.body
    given = {
        "openai": lambda: sent["dimensions"],
        "gemini": lambda: sent["requests"][0]["outputDimensionality"],
        "cohere": lambda: sent["output_dimension"],
    }[kind]()
    assert given == 8


TEXTS = ["I work on the billing team", "pasta recipe"]


def as_openai_prints(text: str) -> list[str]:
    """The numbers of ``text``'s vector as OpenAI writes them in JSON (its float32
    values), as text: what a client that asked for floats reads, digit for digit."""
    numbers: list[str] = json.loads(
        json.dumps(float32_embedding(fake_vector(text), "float")), parse_float=str
    )
    return numbers


def embeddings_of(gateway: GatewayServer, encoding: str, user: str) -> list[Any]:
    """The ``embedding`` of each text, its numbers as text (base64: as sent)."""
    response = httpx.post(
        f"{gateway.url}/v1/embeddings",
        json={
            "model": "openai-embedder",
            "input": TEXTS,
            "encoding_format": encoding,
            "user": user,
        },
    )
    assert response.status_code == 200, response.text
    return [item["embedding"] for item in json.loads(response.text, parse_float=str)["data"]]


@pytest.mark.parametrize("ignored", [False, True], ids=["honoured", "ignored-upstream"])
def test_an_openai_embedder_is_asked_for_base64_and_every_client_encoding_reads_the_same(
    gateway: GatewayServer,
    client: openai.OpenAI,
    openai_fake: OpenAIUpstream,
    user_id: str,
    ignored: bool,
) -> None:
    """The gateway reads float32 bytes instead of 1,536 numbers; a client that asked for
    floats gets OpenAI's numbers digit for digit, one that asked for base64 (the SDK)
    their bytes, also from a server that answers numbers whatever it is asked."""
    openai_fake.ignores_encoding_format = ignored

    floats = embeddings_of(gateway, "float", user_id)
    encoded = embeddings_of(gateway, "base64", user_id)
    decoded = client.embeddings.create(model="openai-embedder", input=TEXTS, user=user_id)

    assert [sent.body["encoding_format"] for sent in openai_fake.requests] == ["base64"] * 3
    asked = {"model": "m", "input": "x", "encoding_format": "base64"}
    answered = httpx.post(f"{openai_fake.base_url}/embeddings", json=asked).json()
    assert isinstance(answered["data"][0]["embedding"], list if ignored else str)
    assert floats == [as_openai_prints(text) for text in TEXTS]
    assert [base64.b64decode(item) for item in encoded] == [
        struct.pack(f"<{len(vector)}f", *vector) for vector in map(fake_vector, TEXTS)
    ]
    assert [item.embedding for item in decoded.data] == [
        [float(number) for number in as_openai_prints(text)] for text in TEXTS
    ]


@pytest.mark.parametrize(
    "embedding", ["not base64!", base64.b64encode(b"\0" * 6).decode()], ids=["text", "6 bytes"]
)
def test_an_unreadable_base64_vector_is_a_502(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str, embedding: str
) -> None:
    data = [{"object": "embedding", "index": 0, "embedding": embedding}]
    fakes["openai"].answer_when(  # this test's input only: the rule outlives the test
        lambda recorded: (
            isinstance(recorded.body, dict) and recorded.body.get("input") == ["unreadable"]
        ),
        Reply(raw_body={"object": "list", "data": data, "model": "m"}),
    )

    with pytest.raises(openai.APIStatusError) as failed:
        client.embeddings.create(model="openai-embedder", input="unreadable", user=user_id)

    assert failed.value.status_code == 502


def test_embeddings_are_billed_to_the_user_and_listed_as_models(
    client: openai.OpenAI, gateway: GatewayServer, user_id: str
) -> None:
    client.embeddings.create(model="openai-embedder", input="one two three", user=user_id)

    with sqlite3.connect(gateway.workdir / "gateway.sqlite3") as database:
        rows = database.execute(
            "SELECT agent, provider, model, prompt_tokens, completion_tokens, kind "
            "FROM inference_ledgerentry WHERE user_id = ?",
            (user_id,),
        ).fetchall()
    assert rows == [("openai-embedder", "openai", "openai-embedding-1", 3, 0, "turn")]
    listed = [model.id for model in client.models.list()]
    assert {"openai-embedder", "gemini-embedder", "cohere-embedder"} <= set(listed)
    assert client.models.retrieve("cohere-embedder").id == "cohere-embedder"


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        ({"model": "openai-agent", "input": "x"}, 400, "model"),
        ({"model": "nope", "input": "x"}, 400, "model"),
        ({"model": "openai-embedder", "input": ""}, 400, "input"),
        ({"model": "gemini-embedder", "input": [1, 2, 3]}, 400, "input"),
        ({"model": "cohere-embedder", "input": [[1, 2], [3]]}, 400, "input"),
        ({"model": "openai-embedder", "input": ["a", [1, 2]]}, 400, "input[1]"),
        ({"model": "openai-embedder", "input": [[1], []]}, 400, "input[1]"),
        ({"model": "openai-embedder", "input": []}, 400, "input"),
        ({"model": "openai-embedder", "input": "x", "encoding_format": "int8"}, 400, None),
        ({"model": "openai-embedder", "input": "x", "dimensions": 0}, 400, "dimensions"),
    ],
    ids=[
        "agent",
        "unknown",
        "empty",
        "tokens-to-gemini",
        "tokens-to-cohere",
        "mixed",
        "empty-tokens",
        "no-input",
        "encoding",
        "dimensions",
    ],
)
def test_what_cannot_be_embedded_is_a_400_naming_the_field(
    gateway: GatewayServer,
    fakes: dict[str, FakeUpstream],
    body: dict[str, Any],
    status: int,
    param: str | None,
) -> None:
    response = httpx.post(f"{gateway.url}/v1/embeddings", json={**body, "user": "u"})

    assert response.status_code == status, response.text
    if param is not None:
        assert response.json()["error"]["param"] == param
    assert all(fake.requests == [] for fake in fakes.values())


def test_an_upstream_failure_is_an_openai_error_and_bills_nothing(
    client: openai.OpenAI, gateway: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes["cohere"].answer_when(
        lambda recorded: recorded.path == "/v2/embed", Reply.of_error(500, {"message": "down"})
    )

    with pytest.raises(openai.APIStatusError) as failed:
        client.embeddings.create(model="cohere-embedder", input="x", user=user_id)

    assert failed.value.status_code == 502
    with sqlite3.connect(gateway.workdir / "gateway.sqlite3") as database:
        billed = database.execute(
            "SELECT COUNT(*) FROM inference_ledgerentry WHERE user_id = ?", (user_id,)
        ).fetchone()
    assert billed == (0,)


def test_without_a_user_it_is_a_400(gateway: GatewayServer) -> None:
    response = httpx.post(
        f"{gateway.url}/v1/embeddings", json={"model": "openai-embedder", "input": "x"}
    )

    assert response.status_code == 400 and response.json()["error"]["code"] == "missing_user"


def test_token_arrays_reach_an_openai_format_embedder_as_they_are(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """LangChain's ``OpenAIEmbeddings`` tokenizes texts itself and sends the tokens."""
    for given in ([15339, 1917], [[15339, 1917], [9906]]):
        answer = client.embeddings.create(model="openai-embedder", input=given, user=user_id)

        count = 1 if isinstance(given[0], int) else len(given)
        assert len(answer.data) == count
        assert fakes["openai"].last.body["input"] == ([given] if count == 1 else given)
        assert answer.usage.prompt_tokens == 2 + (count - 1)


@pytest.mark.clients
def test_langchains_openai_embeddings_with_its_defaults(
    gateway: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    texts = ["I work on the billing team", "pasta recipe"]

    vectors = run_client("langchain_embeddings.py", gateway, "openai-embedder", user_id)["vectors"]

    assert len(vectors) == 2 and all(len(vector) == 64 for vector in vectors)
    (sent,) = fakes["openai"].requests
    tokenized = sent.body["input"]
    assert all(isinstance(item, list) and item for item in tokenized)
    assert len(tokenized) == len(texts)
