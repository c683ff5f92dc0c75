"""Everything decided about a turn before the model is called.

identify the user → parse metadata limits and language → check token budgets (and
reserve the turn's tokens) and load what the database holds for the turn (history,
stored tool exchanges, a bandit's means) in one call → require a user message → route to an agent (an experiment's variant) →
gather its tools → build its request.
"""

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial

from django.utils import timezone

from agents.schema import AgentConfig, Config
from core.requestlog import RequestLog
from inference.cache.use import CacheControl, cache_control
from inference.database import in_database
from inference.engine import Engine
from inference.files.resolution import LoadedFile, file_ids_of, load_files, resolve_documents
from inference.files.storage import folder_of
from inference.ledger.history import load_history
from inference.memory.recall import Recall, recall
from inference.memory.store import Shelf, shelf
from inference.money.admission import admit, release_quietly, reservation_size
from inference.money.caps import operator_caps
from inference.money.keys import KeyGrant
from inference.money.prices import price_of
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

    reservation: int | None  # the budget reservation, when the request carries caps
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
    user_id: str
    requested_model: str  # what the client sent as model: history is kept under it
    routing: Routing
    setting: Setting
    call: AgentCall  # the answering agent's
    user_text: str
    include_usage: bool
    reservation: int | None = None  # settled by the turn's ledger row
    key: KeyGrant | None = None  # the minted API key that pays for it
    cache_control: CacheControl = field(default_factory=CacheControl)  # what the cache may do
    # When the request's work began (an erasure of the user since drops what it writes).
    started_at: datetime = field(default_factory=timezone.now)

    @property
    def key_id(self) -> int | None:
        return self.key.id if self.key is not None else None

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
) -> Turn:
    """``span``: the request's server span (the recall of memories is under it)."""
    started_at = timezone.now()
    user_id = resolve_user_id(client.claims, config, key)
    log.user, log.model = user_id, client.model
    if key is not None:
        key.check_allows(config.target(client.model))
    options = parse_options(client.metadata)
    if operator := operator_caps(config.budgets, user_id):
        options = replace(options, caps=options.caps + operator)
    if _reads_nothing(config, client, options, key):
        stored = Stored(reservation=None, history=[], exchanges={}, arms={})
    else:
        stored = await _stored(config, client, engine, user_id, options, key)
    try:
        turn = await _turn(client, config, engine, log, id_prefix, user_id, options, stored, span)
        return replace(turn, key=key, started_at=started_at)
    except BaseException:
        # The turn never reached the call whose recording settles the reservation.
        if stored.reservation is not None:
            await asyncio.shield(release_quietly(stored.reservation))
        raise


async def _stored(
    config: Config,
    client: ClientRequest,
    engine: Engine,
    user_id: str,
    options: RequestOptions,
    key: KeyGrant | None,
) -> Stored:
    """What the turn needs from the database. The call's unit of work commits even if the
    request is cancelled while it runs (a client that went away): its reservation is then
    released in the background rather than held until it expires."""
    now = timezone.now()
    reading = asyncio.ensure_future(
        in_database(_before_the_call, config, client, user_id, options, now, key)
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
        engine.background.spawn(release_quietly(reservation), name="release reservation")


async def _turn(
    client: ClientRequest,
    config: Config,
    engine: Engine,
    log: RequestLog,
    id_prefix: str,
    user_id: str,
    options: RequestOptions,
    stored: Stored,
    span: Span,
) -> Turn:
    await checked_tools(client.tools)
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
        memories = await recall(routing.agent, user_id, user_text, config, engine, span, shelf)
    return Turn(
        completion_id=log.completion_id,
        created=int(time.time()),
        user_id=user_id,
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
    user_id: str,
    options: RequestOptions,
    now: datetime,
    key: KeyGrant | None,
) -> Stored:
    replays = _replays(config, client, options)
    history = load_history(user_id, client.model, config.history) if replays else []
    call_ids = [call.id for message in client.messages for call in message.tool_calls]
    exchanges = load_exchanges(user_id, call_ids, now)
    arms = bandit_arms(config, config.target(client.model), now)
    file_ids = file_ids_of(client.messages)
    files = load_files(user_id, file_ids, folder_of(config)) if file_ids else {}
    held = _memories(config, client, user_id, options)
    # Last: nothing that may fail comes between the reservation and its return.
    tokens, micro_usd = _reservation_size(config, client, history)
    reservation = admit(user_id, options.caps, tokens, now, key, micro_usd)
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
    config: Config, client: ClientRequest, options: RequestOptions, key: KeyGrant | None
) -> bool:
    """Whether the turn needs nothing from the database (no budget or key limit to check,
    no history to replay, no tool round to restore, no experiment to route), so it skips
    the call."""
    return (
        not options.caps
        and not (key is not None and key.limited)
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


def _reservation_size(
    config: Config, client: ClientRequest, history: list[Message]
) -> tuple[int, int]:
    """The estimated prompt plus the reply's limit, in tokens and in micro-USD at the
    dearest price of the agents the model may route to. The prompt: the longest preamble
    of those agents, the replayed history, the request's system part and its messages."""
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
    tokens = reservation_size(estimate_tokens(prompt) + preamble, client.sampling.max_tokens)
    prompt_tokens = estimate_tokens(prompt) + preamble
    usage = Usage(prompt_tokens, max(0, tokens - prompt_tokens))
    prices = [price_of(config, agent.provider, agent.model) for agent in served]
    micro_usd = max((price.cost(usage) for price in prices if price is not None), default=0)
    return tokens, micro_usd
