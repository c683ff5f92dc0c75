"""Everything decided about a turn before the model is called.

identify the user → parse metadata limits and language → the turn's caller (user, key,
caps, trace) → admit its first model call (budgets and the key's limits; its tokens
reserved) and load what the database holds for the turn (history, stored tool exchanges,
a bandit's means, files, memories) in one call → require a user message → route to an
agent (an experiment's variant) → gather its tools → build its request.
"""

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial

from django.utils import timezone

from agents.schema import AgentConfig, Config
from core.requestlog import RequestLog
from inference.cache.use import CacheControl, cache_control
from inference.calls.asking import Asked, Billing, ask
from inference.database import in_database
from inference.engine import Engine
from inference.files.resolution import LoadedFile, file_ids_of, load_files, resolve_documents
from inference.files.storage import folder_of
from inference.ledger.history import load_history
from inference.memory.recall import Recall, recall
from inference.memory.store import Shelf, shelf
from inference.money.admission import admit, estimated_usage, release_quietly
from inference.money.caller import Caller, Purpose
from inference.money.caps import operator_caps
from inference.money.keys import KeyGrant
from inference.money.prices import price_of, priced
from inference.neutral.errors import ApiError, invalid_request
from inference.neutral.readers import check_tool_schemas
from inference.neutral.request import ClientRequest, ToolOffer
from inference.neutral.tokens import estimate_tokens
from inference.neutral.types import ChatRequest, Message, Usage
from inference.routing.deployments import Route, route_of
from inference.routing.experiments import Arm, Routing, bandit_arms, route
from inference.telemetry.spans import NO_SPAN, Span
from inference.tools.exchanges import load_exchanges, with_exchanges
from inference.tools.loop import Exchange
from inference.tools.toolbox import Toolbox, build_toolbox
from inference.turn.identity import resolve_user_id
from inference.turn.options import RequestOptions, parse_options
from inference.turn.prompt import build_chat_request

logger = logging.getLogger("gateway.inference")
# Tools whose schemas are checked on the event loop; more go to a thread.
_CHECKED_ON_THE_LOOP = 8


@dataclass(frozen=True)
class Setting:
    """The conversation as the turn found it, before any agent is chosen: every agent
    that runs for the turn (the answering one, shadow variants) starts from it."""

    client: ClientRequest
    options: RequestOptions
    history: tuple[Message, ...]
    exchanges: dict[str, Exchange]


@dataclass(frozen=True)
class Stored:
    """What the database holds for the turn, read (and reserved) before the call."""

    reservation: int | None  # the first call's, when the caller is limited
    history: list[Message]
    exchanges: dict[str, Exchange]
    arms: dict[str, Arm]
    files: dict[str, LoadedFile] = field(default_factory=dict)  # the request's, by id
    # The user's memories of the agent asked for by name (read with the rest: one
    # database hop less for a memory agent's recall); None: not read here.
    shelf: Shelf | None = None


@dataclass(frozen=True)
class AgentCall:
    """One agent's side of the turn: where its calls go, its tools, its request."""

    agent: AgentConfig
    route: Route
    toolbox: Toolbox
    request: ChatRequest


@dataclass(frozen=True)
class Turn:
    completion_id: str
    created: int
    caller: Caller  # who it is for, under which limits (the user, the key that pays)
    requested_model: str  # what the client sent as model: history is kept under it
    routing: Routing
    setting: Setting
    call: AgentCall  # the answering agent's
    user_text: str
    include_usage: bool
    reservation: int | None = None  # its first call's (the turn's ledger row settles it)
    cache_control: CacheControl = field(default_factory=CacheControl)  # what the cache may do

    @property
    def user_id(self) -> str:
        return self.caller.user_id

    @property
    def key_id(self) -> int | None:
        return self.caller.key_id

    @property
    def started_at(self) -> datetime:
        """When the request's work began (an erasure of the user since drops what it
        writes)."""
        return self.caller.started_at

    @property
    def agent(self) -> AgentConfig:
        return self.call.agent

    @property
    def remembers(self) -> bool:
        """Whether the turn is kept in history (not for a stateless call or agent)."""
        return self.setting.options.history and self.agent.history

    @property
    def learns(self) -> bool:
        """Whether the agent's memory recalls and extracts for the turn: memory is about
        the user, not the replayed history, so an agent with ``history: false`` has it
        too; only a stateless call (``metadata.history: "off"``) does not."""
        return self.agent.memory is not None and self.setting.options.history


async def prepare_turn(
    client: ClientRequest,
    config: Config,
    engine: Engine,
    log: RequestLog,
    id_prefix: str = "chatcmpl-",
    key: KeyGrant | None = None,
    span: Span = NO_SPAN,
    purpose: Purpose = "turn",
    task_depth: int = 0,
) -> Turn:
    """``span``: the request's server span (the turn's calls and the recall of memories
    are under it); ``purpose`` and ``task_depth``: why the turn runs (a request, a task
    ``task_depth`` levels down, a call over MCP)."""
    started_at = timezone.now()
    user_id = resolve_user_id(client.claims, config, key)
    log.user, log.model = user_id, client.model
    if key is not None:
        key.check_allows(config.target(client.model))
    options = parse_options(client.metadata)
    if operator := operator_caps(config.budgets, user_id):
        options = replace(options, caps=options.caps + operator)
    caller = Caller(user_id, key, options.caps, purpose, span, started_at, task_depth)
    if _reads_nothing(config, client, options, caller):
        stored = Stored(reservation=None, history=[], exchanges={}, arms={})
    else:
        stored = await _stored(config, client, engine, caller, options)
    try:
        return await _turn(client, config, engine, log, id_prefix, caller, options, stored)
    except BaseException:
        # The turn never reached the call whose recording settles the reservation.
        if stored.reservation is not None:
            await asyncio.shield(release_quietly([stored.reservation]))
        raise


async def _stored(
    config: Config,
    client: ClientRequest,
    engine: Engine,
    caller: Caller,
    options: RequestOptions,
) -> Stored:
    """What the turn needs from the database. The call's unit of work commits even if the
    request is cancelled while it runs (a client that went away): its reservation is then
    released in the background rather than held until it expires."""
    now = timezone.now()
    reading = asyncio.ensure_future(
        in_database(_before_the_call, config, client, caller, options, now)
    )
    try:
        return await asyncio.shield(reading)
    except asyncio.CancelledError:
        reading.add_done_callback(partial(_release_orphan, engine))
        raise


def _release_orphan(engine: Engine, reading: "asyncio.Future[Stored]") -> None:
    if reading.cancelled() or reading.exception() is not None:
        return
    if (reservation := reading.result().reservation) is not None:
        engine.background.spawn(release_quietly([reservation]), name="release reservation")


async def _turn(
    client: ClientRequest,
    config: Config,
    engine: Engine,
    log: RequestLog,
    id_prefix: str,
    caller: Caller,
    options: RequestOptions,
    stored: Stored,
) -> Turn:
    await checked_tools(client.tools)
    user_id = caller.user_id
    user_text = client.user_text
    if user_text is None:
        raise invalid_request(
            f"{client.conversation_param} must contain at least one message with role 'user'",
            param=client.conversation_param,
            code="missing_user_message",
        )
    routing = route(config, config.target(client.model), user_id, stored.arms, engine.rng)
    log.agent, log.provider = routing.agent.name, routing.agent.provider
    client = await _with_documents(client, stored.files, routing, config, engine)
    user_text = client.user_text or user_text  # with the names of its files
    log.experiment, log.variant = routing.experiment, routing.variant
    log.completion_id = f"{id_prefix}{uuid.uuid4().hex}"
    history = stored.history if routing.agent.history else []
    setting = Setting(client, options, tuple(history), stored.exchanges)
    memories = Recall()
    if routing.agent.memory is not None and options.history:
        shelf = stored.shelf if routing.experiment is None else None
        memories = await recall(routing.agent, caller, user_text, config, engine, shelf)
    return Turn(
        completion_id=log.completion_id,
        created=int(time.time()),
        caller=caller,
        requested_model=client.model,
        routing=routing,
        setting=setting,
        call=await agent_call(routing.agent, setting, user_id, config, engine, memories.prompt),
        user_text=user_text,
        include_usage=client.include_usage,
        reservation=stored.reservation,
        cache_control=cache_control(client.cache_control, off=not options.cache),
    )


async def agent_call(
    agent: AgentConfig,
    setting: Setting,
    user_id: str,
    config: Config,
    engine: Engine,
    memories: str = "",
) -> AgentCall:
    """``agent``'s request for the turn: its preamble, what it remembers of the user
    (``memories``), its tools (for the user) and the client's, the conversation with the
    tool names its provider knows."""
    client = setting.client
    route = route_of(agent)
    toolbox = await build_toolbox(
        agent, config, engine.mcp, client.tools.specs, route.tool_names(config), user_id
    )
    own = tuple(toolbox.to_provider(message) for message in client.messages)
    conversation = [*setting.history, *with_exchanges(own, setting.exchanges)]
    request = build_chat_request(
        agent, config, client, setting.options, conversation, toolbox, memories
    )
    return AgentCall(agent, route, toolbox, request)


async def ask_agent(
    agent: AgentConfig,
    setting: Setting,
    caller: Caller,
    billing: Billing,
    config: Config,
    engine: Engine,
    going_on: Callable[[], Awaitable[None]] | None = None,
) -> Asked:
    """``agent``'s answer to the conversation ``setting`` holds, asked as a turn asks it
    (its preamble, skills and tools, the tool loop), for ``caller``; refused when its
    tools cannot be gathered (an MCP server is down)."""
    started = time.perf_counter()
    try:
        call = await agent_call(agent, setting, caller.user_id, config, engine)
    except ApiError as error:
        latency_ms = (time.perf_counter() - started) * 1000
        return Asked.refused(error.message, error.code or error.error_type, latency_ms)
    return await ask(
        caller,
        config,
        engine,
        call.route,
        call.request,
        billing,
        toolbox=call.toolbox,
        going_on=going_on,
    )


async def checked_tools(offer: ToolOffer) -> None:
    """The tools' JSON Schemas checked (400 naming the first that is not usable), once the
    request is admitted: about a millisecond a tool, so a long list is checked off the
    event loop."""
    if len(offer.specs) > _CHECKED_ON_THE_LOOP:
        await asyncio.to_thread(check_tool_schemas, offer)
    elif offer.specs:
        check_tool_schemas(offer)


def live_config(config: Config | None, problems: list[str]) -> Config:
    """The live config; without one, a 503 that says so but never what the problems are
    (they name the file's contents, secrets' places included: the log and the admin
    show them)."""
    if config is None:
        detail = (
            f"its config file is invalid ({len(problems)} problems)"
            if problems
            else "no config file is loaded"
        )
        raise ApiError(
            503,
            f"The gateway cannot serve requests: {detail}. The server log and the admin "
            "(/admin) say what to fix.",
            code="config_unavailable",
        )
    return config


def _before_the_call(
    config: Config,
    client: ClientRequest,
    caller: Caller,
    options: RequestOptions,
    now: datetime,
) -> Stored:
    user_id = caller.user_id
    replays = _replays(config, client, options)
    history = load_history(user_id, client.model, config.history) if replays else []
    call_ids = [call.id for message in client.messages for call in message.tool_calls]
    exchanges = load_exchanges(user_id, call_ids, now)
    arms = bandit_arms(config, config.target(client.model), now)
    file_ids = file_ids_of(client.messages)
    files = load_files(user_id, file_ids, folder_of(config)) if file_ids else {}
    held = _memories(config, client, user_id, options)
    # Last: nothing that may fail comes between the reservation and its return.
    estimate = _first_call_estimate(config, client, history)
    reservation = admit(caller, estimate, now, request=True)
    return Stored(reservation, history, exchanges, arms, files, held)


def _memories(
    config: Config, client: ClientRequest, user_id: str, options: RequestOptions
) -> Shelf | None:
    """The user's memories of the agent the request names, when it recalls (an experiment's
    variant is known only after routing: its recall reads them itself). A failure here
    leaves them to the recall, which costs the turn its memories, never the turn."""
    agent = config.agent(config.target(client.model))
    if agent is None or agent.memory is None or not options.history:
        return None
    embedder = config.embedder(agent.memory.embedder)
    if embedder is None:
        return None
    try:
        return shelf(user_id, agent.name, embedder.name)
    except Exception:
        logger.exception("could not read the memories of %s for %s", agent.name, user_id)
        return None


def _reads_nothing(
    config: Config, client: ClientRequest, options: RequestOptions, caller: Caller
) -> bool:
    """Whether the turn needs nothing from the database (no budget or key limit to check,
    no history to replay, no tool round to restore, no experiment to route), so it skips
    the call."""
    return (
        not caller.limited
        and not caller.rechecks_key
        and not _replays(config, client, options)
        and not any(message.tool_calls for message in client.messages)
        and config.experiment(config.target(client.model)) is None
        and not file_ids_of(client.messages)
    )


async def _with_documents(
    client: ClientRequest,
    files: dict[str, LoadedFile],
    routing: Routing,
    config: Config,
    engine: Engine,
) -> ClientRequest:
    """The request with its files made whole (docs/files.md); a PDF's text is read when a
    provider of an agent that answers (its deployments, fallbacks, shadows) takes none."""
    if not any(message.with_media for message in client.messages):
        return client
    agents = [routing.agent, *routing.shadows]
    providers = {deployment.provider for agent in agents for deployment in route_of(agent)}
    with_text = not all(
        engine.providers.provider(name, config).takes_documents for name in providers
    )
    messages = await asyncio.to_thread(
        resolve_documents, client.messages, files, with_text, routing.agent.provider, config.files
    )
    return replace(client, messages=messages)


def _replays(config: Config, client: ClientRequest, options: RequestOptions) -> bool:
    """Whether the turn starts from the user's stored history."""
    agent = config.agent(config.target(client.model))
    stateless = not options.history or (agent is not None and not agent.history)
    return not (client.manages_history or stateless)


def _first_call_estimate(config: Config, client: ClientRequest, history: list[Message]) -> Usage:
    """The estimated prompt plus the reply's limit, priced at the dearest price of the
    agents the model may route to. The prompt: the longest preamble of those agents, the
    replayed history, the request's system part and its messages."""
    target = config.target(client.model)
    agents = [config.agent(target)]
    if (experiment := config.experiment(target)) is not None:
        agents = [config.agent(variant.agent) for variant in experiment.variants]
    served = [agent for agent in agents if agent is not None]
    preamble = max((estimate_tokens(agent.preamble) for agent in served), default=0)
    prompt = (
        "".join(message.content for message in history)
        + "".join(client.system)
        + "".join(message.content for message in client.messages)
    )
    usage = estimated_usage(estimate_tokens(prompt) + preamble, client.sampling.max_tokens)
    prices = [price_of(config, agent.provider, agent.model) for agent in served]
    costs = [priced(usage, price).cost_micro_usd or 0 for price in prices if price is not None]
    return replace(usage, cost_micro_usd=max(costs, default=0))
