"""The ``metadata`` keys the gateway interprets: token caps, the reply language,
``history: "off"`` for a stateless call and ``cache: "off"`` for one the response cache
leaves alone."""

import re
from dataclasses import dataclass

from inference.money.caps import WINDOWS, TokenCap
from inference.neutral.errors import invalid_request

# Loose shape of a BCP 47 tag (subtags of letters and digits joined by hyphens);
# langcodes then checks it properly. It alone would accept "en_US".
_TAG_SHAPE = re.compile(r"^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$")
_NON_NEGATIVE_INTEGER = re.compile(r"^[0-9]+$")
MAX_CAP = 10**15  # larger caps are no caps; beyond it a number is refused, not parsed
MAX_TAG_LENGTH = 64  # far above any real tag; longer ones are refused before parsing


@dataclass(frozen=True)
class ReplyLanguage:
    tag: str
    english_name: str


@dataclass(frozen=True)
class RequestOptions:
    caps: tuple[TokenCap, ...] = ()
    language: ReplyLanguage | None = None
    history: bool = True  # replay and store history (metadata history "off": neither)
    cache: bool = True  # the response cache may answer and keep it (metadata cache "off")


def parse_options(metadata: dict[str, str] | None) -> RequestOptions:
    metadata = metadata or {}
    caps = []
    for key, (window, seconds) in WINDOWS.items():
        if key not in metadata:
            continue
        caps.append(TokenCap(window=window, seconds=seconds, cap=_cap(key, metadata[key])))
    language = metadata.get("language")
    return RequestOptions(
        caps=tuple(caps),
        language=parse_language(language) if language is not None else None,
        history=_switch(metadata, "history"),
        cache=_switch(metadata, "cache"),
    )


def _switch(metadata: dict[str, str], key: str) -> bool:
    value = metadata.get(key, "on")
    if value not in ("on", "off"):
        raise invalid_request(
            f"metadata.{key} must be 'on' or 'off', got {value!r}",
            param=f"metadata.{key}",
            code="invalid_metadata",
        )
    return value == "on"


def _cap(key: str, value: str) -> int:
    # The length check comes first: int() of thousands of digits is slow, then refused.
    if len(value) > len(str(MAX_CAP)) or not _NON_NEGATIVE_INTEGER.match(value):
        cap = None
    else:
        cap = int(value)
    if cap is None or cap > MAX_CAP:
        shown = value if len(value) <= 40 else f"{value[:40]}… ({len(value)} characters)"
        raise invalid_request(
            f"metadata.{key} must be a non-negative integer up to 10^15 written as a string, "
            f"got {shown!r}",
            param=f"metadata.{key}",
            code="invalid_metadata",
        )
    return cap


def parse_language(tag: str) -> ReplyLanguage:
    if len(tag) > MAX_TAG_LENGTH:
        raise invalid_request(
            f"metadata.language must be a BCP 47 language tag of at most {MAX_TAG_LENGTH} "
            f"characters, got {len(tag)}",
            param="metadata.language",
            code="invalid_metadata",
        )
    # Loaded by the first request that names a language, not by every process (3 MB);
    # the names it gives load on their first use anyway.
    import langcodes

    if not _TAG_SHAPE.match(tag) or not langcodes.tag_is_valid(tag):
        raise invalid_request(
            f"metadata.language must be a well-formed BCP 47 language tag (like 'en' or 'pt-BR'), got {tag!r}",
            param="metadata.language",
            code="invalid_metadata",
        )
    name = langcodes.Language.get(tag).display_name("en")
    return ReplyLanguage(tag=tag, english_name=tag if name.startswith("Unknown language") else name)


def language_instruction(language: ReplyLanguage) -> str:
    return (
        f"Always reply in {language.english_name} (language tag {language.tag}), even when the "
        f"user writes in another language. Do not add translations into other languages."
    )
