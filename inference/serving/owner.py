"""Whose a request's stored things are (files, batches): the live config, and the user
the request is for, as for any request (a key, the bound principal, ``X-User-Id``,
``default_user_id``)."""

from agents.schema import Config
from inference.neutral.request import Claims
from inference.serving.context import InferenceRequest
from inference.turn.identity import resolve_user_id
from inference.turn.preparation import live_config


def owner(request: InferenceRequest) -> tuple[Config, str]:
    holder = request.runtime.holder
    config = live_config(holder.config, holder.problems)
    claims = Claims(header_user=request.headers.get("X-User-Id"), bound_user=request.bound_user)
    user_id = resolve_user_id(claims, config, request.api_key)
    request.log.user = user_id
    return config, user_id
