"""``memory.user_state``: long-term memory for every agent, with the embedder and the
extraction model Coulisse would pick."""

from typing import Any

from agents.coulisse.data import entries, mapping
from agents.schema import ConfigWarning

# The embedder ``memory.user_state`` makes, listed with the configured embedders.
MEMORY_EMBEDDER = "memory:embedder"
# Coulisse's picks when ``user_state`` names no extraction model: the first configured
# provider in this order, with its cheap model.
_EXTRACTORS = (
    ("anthropic", "claude-haiku-4-5-20251001"),
    ("openai", "gpt-4o-mini"),
    ("gemini", "gemini-2.0-flash-lite"),
    ("groq", "llama-3.1-8b-instant"),
    ("deepseek", "deepseek-chat"),
    ("cohere", "command-r"),
)
_OPENAI_EMBEDDING_MODEL = "text-embedding-3-small"


def memory_for_all(
    data: dict[str, Any], problems: list[str], warnings: list[ConfigWarning]
) -> None:
    """``memory.user_state`` turns long-term memory on for every agent that names none."""
    memory = data.get("memory")
    if not isinstance(memory, dict):
        return
    for key in memory:
        if key != "user_state":
            warnings.append(
                ConfigWarning(f"memory.{key}", "not a key of memory: ignored (memories are "
                              "kept in the gateway's database)")
            )  # fmt: skip
    state = memory.get("user_state", False)
    if state is False or state is None:
        return
    if state is not True and not isinstance(state, dict):
        problems.append("memory.user_state: must be true, false or a mapping of settings")
        return
    settings = mapping(state)
    providers = mapping(data.get("providers"))
    embedder = _memory_embedder(settings.get("embed_with"), providers, warnings)
    extractor = _memory_extractor(settings.get("learn_from"), providers, problems)
    if embedder is None or extractor is None:
        return
    data["embedders"] = [*(data.get("embedders") or []), {"name": MEMORY_EMBEDDER, **embedder}]
    shared = {"embedder": MEMORY_EMBEDDER, "extractor": extractor}
    for setting, ours in (("recall_k", "recall"), ("dedup_threshold", "dedup")):
        if setting in settings:
            shared[ours] = settings[setting]
    if "max_facts_per_turn" in settings:
        shared["max_facts"] = settings["max_facts_per_turn"]
    for _, agent in entries(data.get("agents")):
        caches_globally = mapping(agent.get("cache")).get("scope") == "global"
        if (
            "memory" not in agent
            and agent.get("history", True) is not False
            and not caches_globally
        ):
            agent["memory"] = dict(shared)


def _memory_embedder(
    named: Any, providers: dict[str, Any], warnings: list[ConfigWarning]
) -> dict[str, str] | None:
    path = "memory.user_state.embed_with"
    if isinstance(named, dict) and named.get("provider") != "openai":
        warnings.append(
            ConfigWarning(path, f"the {named.get('provider')!r} embedder is not served here "
                          "(an openai one is): long-term memory stays off")
        )  # fmt: skip
        return None
    if "openai" not in providers:
        where = path if named is not None else "memory.user_state"
        warnings.append(
            ConfigWarning(where, "needs an openai provider for its embedder (text-embedding-"
                          "3-small; Coulisse's offline hash embedder is not served here): "
                          "long-term memory stays off")
        )  # fmt: skip
        return None
    model = mapping(named).get("model") or _OPENAI_EMBEDDING_MODEL
    return {"provider": "openai", "model": model}


def _memory_extractor(
    named: Any, providers: dict[str, Any], problems: list[str]
) -> dict[str, Any] | None:
    if isinstance(named, dict):
        return {"provider": named.get("provider"), "model": named.get("model")}
    for provider, model in _EXTRACTORS:
        if provider in providers:
            return {"provider": provider, "model": model}
    problems.append("memory.user_state: needs a provider to pick the facts worth keeping")
    return None
