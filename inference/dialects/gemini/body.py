"""The bodies of Gemini's ``generateContent`` (and ``streamGenerateContent``),
``countTokens``, ``embedContent`` and ``batchEmbedContents`` as we accept them, in the
REST API's camelCase, as Google's SDKs and Gemini CLI send them (``Lenient``: unknown
fields are ignored, known ones typed)."""

from typing import Any

from pydantic import Field, field_validator

from inference.neutral.body import Lenient, counted_before_read


def named(camel: str) -> Any:
    """A field the API spells ``camel``."""
    return Field(default=None, alias=camel)


class Content(Lenient):
    role: str | None = None
    parts: list[dict[str, Any]] = []


class Generation(Lenient):
    """What a generation is asked with beside its ``contents``."""

    system_instruction: Content | None = named("systemInstruction")
    tools: list[dict[str, Any]] | None = None
    tool_config: dict[str, Any] | None = named("toolConfig")
    generation_config: dict[str, Any] | None = named("generationConfig")
    safety_settings: list[dict[str, Any]] | None = named("safetySettings")


class GenerateContentIn(Generation):
    contents: list[Content] = Field(min_length=1)
    _contents_counted = field_validator("contents", mode="before")(counted_before_read)


class CountTokensIn(Generation):
    """``contents`` (with the fields of a generation beside them, as Vertex AI takes
    them), or a whole ``generateContentRequest``."""

    contents: list[Content] | None = None
    _contents_counted = field_validator("contents", mode="before")(counted_before_read)
    generate_content_request: GenerateContentIn | None = named("generateContentRequest")


class EmbedContentIn(Lenient):
    model: str | None = None  # in a batch: each request's
    content: Content
    task_type: str | None = named("taskType")
    output_dimensionality: int | None = Field(default=None, ge=1, alias="outputDimensionality")


class BatchEmbedIn(Lenient):
    requests: list[EmbedContentIn] = Field(min_length=1, max_length=2048)
