"""Generated request bodies for the fuzz tests of the dialects' readers: valid bodies that
use every field a reader reads (``SEEDS``), each mutated at one to three places, a value
swapped for any JSON value (an object, a list, a number, a lone surrogate...), a key
dropped or a value wrapped in a list. A body of the right shape but a wrong type deep
inside it is what a reader must refuse with a 400 naming the field, not a crash."""

import copy
from typing import Any

from hypothesis import strategies as st

type Path = tuple[str | int, ...]

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["", "STOP", "ANY", "object", "\ud800", "x" * 70, "file-1"])
)
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
# A value of each JSON type, the likeliest to be taken for another.
_CONFUSING: st.SearchStrategy[Any] = st.sampled_from(
    [{}, [], 3.5, True, "STOP", None, -1, ["x"], {"": 1}, [{}]]
)

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "pattern": "^[A-Z]"}, "days": {"type": "integer"}},
    "required": ["city"],
}
PDF = "data:application/pdf;base64,JVBERi0xLjQK"
PNG = "data:image/png;base64,iVBORw0KGgo="


def _chat() -> list[dict[str, Any]]:
    weather = {"name": "get_weather", "description": "Weather.", "parameters": SCHEMA}
    return [
        {
            "model": "openai-agent",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "developer", "content": [{"type": "text", "text": "Dev."}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Look", "cache_control": {"type": "ephemeral"}},
                        {"type": "image_url", "image_url": {"url": PNG, "detail": "low"}},
                        {"type": "file", "file": {"file_data": PDF, "filename": "a.pdf"}},
                        {"type": "file", "file": {"file_id": "file-1"}},
                    ],
                    "name": "bob",
                },
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Calling"},
                        {"type": "refusal", "refusal": "no"},
                    ],
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
                {"role": "user", "content": "Thanks", "cache_control": {"type": "ephemeral"}},
            ],
            "stream": True,
            "stream_options": {"include_usage": True},
            "safety_identifier": "alice",
            "user": "alice",
            "metadata": {
                "language": "fr",
                "tokens_per_day": "1000",
                "history": "off",
                "cache": "on",
            },
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": SCHEMA, "strict": True},
            },
            "temperature": 0.5,
            "top_p": 0.9,
            "max_tokens": 100,
            "max_completion_tokens": 100,
            "stop": ["END"],
            "seed": 1,
            "n": 1,
            "frequency_penalty": 0.1,
            "presence_penalty": 0.1,
            "reasoning_effort": "low",
            "logprobs": True,
            "top_logprobs": 2,
            "logit_bias": {"50256": -100},
            "service_tier": "auto",
            "verbosity": "low",
            "prediction": {"type": "content", "content": "x"},
            "modalities": ["text"],
            "tools": [{"type": "function", "function": weather}],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
            "parallel_tool_calls": False,
        },
        {
            "model": "openai-agent",
            "messages": [{"role": "user", "content": "Hi"}],
            "response_format": {"type": "json_object"},
            "stop": "END",
            "tools": [{"type": "function", "function": {"name": "f"}}],
            "tool_choice": "required",
        },
    ]


def _responses() -> list[dict[str, Any]]:
    return [
        {
            "model": "openai-agent",
            "input": [
                {"role": "system", "content": "Be brief."},
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "Hi"},
                        {"type": "input_image", "image_url": PNG},
                        {"type": "input_image", "file_id": "file-1"},
                        {"type": "input_file", "file_data": PDF, "filename": "a.pdf"},
                    ],
                },
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "ok"}],
                },
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": "get_weather",
                    "arguments": "{}",
                },
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            ],
            "instructions": "Answer.",
            "tools": [
                {
                    "type": "function",
                    "name": "get_weather",
                    "description": "W.",
                    "parameters": SCHEMA,
                },
                {
                    "type": "namespace",
                    "name": "ns",
                    "tools": [
                        {"type": "function", "name": "lookup", "parameters": {"type": "object"}}
                    ],
                },
                {"type": "web_search"},
            ],
            "tool_choice": {"type": "function", "name": "lookup"},
            "parallel_tool_calls": True,
            "text": {
                "format": {"type": "json_schema", "name": "r", "schema": SCHEMA, "strict": True},
                "verbosity": "low",
            },
            "reasoning": {"effort": "low"},
            "temperature": 0.2,
            "top_p": 1,
            "max_output_tokens": 50,
            "top_logprobs": 1,
            "service_tier": "auto",
            "metadata": {"language": "en"},
            "user": "u",
            "safety_identifier": "u",
            "stream": False,
            "store": False,
        },
        {"model": "openai-agent", "input": "Hi", "text": {"format": {"type": "json_object"}}},
    ]


def _messages() -> list[dict[str, Any]]:
    return [
        {
            "model": "openai-agent",
            "max_tokens": 100,
            "system": [
                {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
            ],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral"}},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
                        },
                        {
                            "type": "image",
                            "source": {"type": "url", "url": "https://example.com/a.png"},
                        },
                        {"type": "image", "source": {"type": "file", "file_id": "file-1"}},
                        {
                            "type": "document",
                            "source": {
                                "type": "base64",
                                "media_type": "application/pdf",
                                "data": "JVBE",
                            },
                            "title": "a.pdf",
                        },
                        {
                            "type": "document",
                            "source": {"type": "text", "media_type": "text/plain", "data": "x"},
                        },
                        {"type": "document", "source": {"type": "file", "file_id": "file-2"}},
                    ],
                },
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                        {"type": "text", "text": "calling"},
                        {
                            "type": "tool_use",
                            "id": "tu_1",
                            "name": "get_weather",
                            "input": {"city": "Paris"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "tu_1",
                            "content": [{"type": "text", "text": "sunny"}],
                            "is_error": False,
                        }
                    ],
                },
                {"role": "system", "content": "More system."},
            ],
            "tools": [
                {"name": "get_weather", "description": "W.", "input_schema": SCHEMA},
                {"type": "web_search_20250305", "name": "web_search"},
            ],
            "tool_choice": {
                "type": "tool",
                "name": "get_weather",
                "disable_parallel_tool_use": True,
            },
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "stop_sequences": ["END"],
            "temperature": 0.5,
            "top_p": 0.9,
            "top_k": 5,
            "metadata": {"user_id": '{"device_id": "d", "account_uuid": "a"}', "tag": "x"},
            "stream": True,
            "container": "extra",
        },
        {
            "model": "openai-agent",
            "max_tokens": 1,
            "system": "Hi",
            "messages": [{"role": "user", "content": "Hi"}],
        },
    ]


def _gemini() -> list[dict[str, Any]]:
    return [
        {
            "contents": [
                {
                    "role": "user",
                    "parts": [
                        {"text": "Hi"},
                        {"inlineData": {"mimeType": "image/png", "data": "iVBO"}},
                        {"inlineData": {"mimeType": "application/pdf", "data": "JVBERg=="}},
                        {
                            "fileData": {
                                "mimeType": "image/png",
                                "fileUri": "https://example.com/a.png",
                            }
                        },
                    ],
                },
                {
                    "role": "model",
                    "parts": [
                        {"thought": True, "text": "hmm"},
                        {"text": "calling"},
                        {
                            "functionCall": {
                                "name": "get_weather",
                                "args": {"city": "Paris"},
                                "id": "c1",
                            },
                            "thoughtSignature": "c2ln",
                        },
                        {"functionCall": {"name": "lookup", "args": {}}},
                    ],
                },
                {
                    "role": "user",
                    "parts": [
                        {
                            "functionResponse": {
                                "name": "get_weather",
                                "id": "c1",
                                "response": {"output": "sunny"},
                            }
                        },
                        {"functionResponse": {"name": "lookup", "response": {"a": 1, "b": 2}}},
                    ],
                },
            ],
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "tools": [
                {
                    "functionDeclarations": [
                        {
                            "name": "get_weather",
                            "description": "W.",
                            "parameters": {
                                "type": "OBJECT",
                                "properties": {"city": {"type": "STRING", "nullable": True}},
                                "required": ["city"],
                                "propertyOrdering": ["city"],
                            },
                        },
                        {
                            "name": "lookup",
                            "parametersJsonSchema": {"type": "OBJECT", "properties": {}},
                        },
                    ]
                },
                {"googleSearch": {}},
            ],
            "toolConfig": {
                "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
            },
            "generationConfig": {
                "temperature": 0.5,
                "topP": 0.9,
                "topK": 5,
                "maxOutputTokens": 100,
                "stopSequences": ["END"],
                "seed": 1,
                "presencePenalty": 0.1,
                "frequencyPenalty": 0.1,
                "candidateCount": 1,
                "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": True},
                "responseMimeType": "application/json",
                "responseSchema": {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}},
            },
            "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        },
        {
            "contents": [{"parts": [{"text": "Hi"}]}],
            "tool_config": {"function_calling_config": {"mode": "AUTO"}},
            "generation_config": {
                "response_mime_type": "application/json",
                "response_json_schema": SCHEMA,
                "thinking_config": {"thinking_budget": 0},
                "stop_sequences": ["a", "b"],
            },
        },
    ]


def _gemini_count() -> list[dict[str, Any]]:
    whole = _gemini()[0]
    return [
        {"contents": whole["contents"]},
        {"generateContentRequest": {"model": "models/openai-agent", **whole}},
        whole,
    ]


def _embeddings() -> list[dict[str, Any]]:
    return [
        {
            "model": "openai-embedder",
            "input": "hello",
            "encoding_format": "base64",
            "dimensions": 8,
            "user": "u",
        },
        {"model": "openai-embedder", "input": ["a", "b"]},
        {"model": "openai-embedder", "input": [[1, 2, 3], [4]]},
        {"model": "openai-embedder", "input": [1, 2, 3]},
    ]


def _gemini_embeddings() -> list[dict[str, Any]]:
    one = {
        "content": {"parts": [{"text": "hi"}]},
        "taskType": "RETRIEVAL_QUERY",
        "outputDimensionality": 8,
    }
    return [
        one,
        {
            "requests": [
                {"model": "models/openai-embedder", **one},
                {"content": {"parts": [{"text": "b"}]}},
            ]
        },
    ]


SEEDS: dict[str, list[dict[str, Any]]] = {
    "chat": _chat(),
    "responses": _responses(),
    "messages": _messages(),
    "messages_count": [
        {key: value for key, value in body.items() if key != "max_tokens"} for body in _messages()
    ],
    "embeddings": _embeddings(),
    "gemini": _gemini(),
    "gemini_count": _gemini_count(),
    "gemini_embed": _gemini_embeddings(),
}


def places(value: Any, where: Path = ()) -> list[Path]:
    """Every place in ``value``: itself, and each value inside it."""
    found = [where]
    if isinstance(value, dict):
        for key, item in value.items():
            found += places(item, (*where, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += places(item, (*where, index))
    return found


def _set(body: Any, where: Path, value: Any) -> Any:
    if not where:
        return value
    parent = body
    for step in where[:-1]:
        parent = parent[step]
    parent[where[-1]] = value
    return body


def _drop(body: Any, where: Path) -> Any:
    if not where:
        return body
    parent = body
    for step in where[:-1]:
        parent = parent[step]
    del parent[where[-1]]
    return body


def _get(body: Any, where: Path) -> Any:
    for step in where:
        body = body[step]
    return body


@st.composite
def mutated(draw: st.DrawFn, dialect: str) -> Any:
    """A seed of ``dialect`` changed at one to three places."""
    body = copy.deepcopy(draw(st.sampled_from(SEEDS[dialect])))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        where = draw(st.sampled_from(places(body)[1:] or [()]))
        change = draw(st.sampled_from(["replace", "replace", "drop", "wrap"]))
        if change == "drop":
            body = _drop(body, where)
        elif change == "wrap":
            body = _set(body, where, [_get(body, where)])
        else:
            body = _set(body, where, copy.deepcopy(draw(_CONFUSING | JSON_VALUES)))
    return body
