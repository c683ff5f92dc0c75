"""Build the neutral provider request from the client's request (DESIGN 4.2, 4.4, 4.5).

System prompt order: agent preamble, language instruction, the request's own system
messages, structured-output instruction.
"""

from agents.schema import AgentConfig
from inference.options import RequestOptions, language_instruction
from inference.providers.types import ChatRequest, Message, ResponseFormat, Sampling, ToolCall
from inference.schemas import ChatCompletionIn, ChatMessageIn
from inference.structured import structured_output_instruction

SYSTEM_ROLES = ("system", "developer")


def build_chat_request(
    agent: AgentConfig,
    body: ChatCompletionIn,
    options: RequestOptions,
    history: list[Message],
    response_format: ResponseFormat | None,
) -> ChatRequest:
    system_parts = [agent.preamble]
    if options.language is not None:
        system_parts.append(language_instruction(options.language))
    system_parts.extend(message.text for message in body.messages if message.role in SYSTEM_ROLES)
    if response_format is not None:
        system_parts.append(structured_output_instruction(response_format))
    conversation = to_neutral_messages(body.messages)
    if not client_manages_history(body):
        conversation = [*history, *conversation]
    return ChatRequest(
        model=agent.model,
        system="\n\n".join(part for part in system_parts if part.strip()),
        messages=tuple(conversation),
        sampling=sampling_of(body),
        response_format=response_format,
    )


def client_manages_history(body: ChatCompletionIn) -> bool:
    return any(message.role == "assistant" for message in body.messages)


def last_user_text(body: ChatCompletionIn) -> str | None:
    for message in reversed(body.messages):
        if message.role == "user":
            return message.text
    return None


def sampling_of(body: ChatCompletionIn) -> Sampling:
    stop = (body.stop,) if isinstance(body.stop, str) else tuple(body.stop or ())
    return Sampling(
        temperature=body.temperature,
        top_p=body.top_p,
        max_tokens=body.max_completion_tokens or body.max_tokens,
        stop=stop,
        seed=body.seed,
    )


def to_neutral_messages(messages: list[ChatMessageIn]) -> list[Message]:
    tool_names: dict[str, str] = {}
    converted: list[Message] = []
    for message in messages:
        if message.role in SYSTEM_ROLES:
            continue
        if message.role == "assistant":
            calls = tuple(
                ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments)
                for call in message.tool_calls or []
            )
            tool_names.update((call.id, call.name) for call in calls)
            converted.append(Message(role="assistant", content=message.text, tool_calls=calls))
        elif message.role == "tool":
            call_id = message.tool_call_id or ""
            converted.append(
                Message(
                    role="tool",
                    content=message.text,
                    tool_call_id=call_id,
                    name=message.name or tool_names.get(call_id),
                )
            )
        else:
            converted.append(Message(role="user", content=message.text))
    return converted
