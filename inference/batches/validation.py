"""A batch's input checked before anything runs: every line a JSON object with a
``custom_id`` of its own, ``method`` POST, ``url`` the batch's endpoint and a ``body``
whose ``model`` the config serves at that endpoint (an agent, an experiment or an alias;
an embedder for ``/v1/embeddings``), and no more lines than ``batches.max_requests``.
Each problem names its line (1-based; a duplicate ``custom_id``: its later line)."""

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agents.schema import Config

MAX_CUSTOM_ID = 512


@dataclass(frozen=True)
class Request:
    number: int  # 1-based
    custom_id: str
    body: dict[str, Any]


@dataclass(frozen=True)
class Problem:
    code: str
    message: str
    line: int

    def as_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "line": self.line, "param": None}


@dataclass(frozen=True)
class Checked:
    requests: list[Request]
    problems: list[Problem]


def read_jsonl(data: bytes) -> Iterable[tuple[int, Any]]:
    """Each non-blank line of ``data`` with its number, parsed (``ValueError`` where it is
    not JSON)."""
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as error:
            yield number, error


def check_requests(
    lines: Iterable[tuple[int, Any]], endpoint: str, embedders: bool, config: Config
) -> Checked:
    """``embedders``: the endpoint's models are embedders (else agents or experiments)."""
    limit = config.batches.max_requests
    requests: list[Request] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    count = 0
    for number, line in lines:
        count += 1
        if count > limit:
            problems.append(
                Problem(
                    "too_many_requests",
                    f"The batch has more than batches.max_requests ({limit}) requests",
                    number,
                )
            )
            break
        problem = _problem(line, endpoint, embedders, config, seen)
        if problem is not None:
            problems.append(Problem(problem[0], problem[1], number))
            continue
        seen.add(line["custom_id"])
        requests.append(Request(number, line["custom_id"], line["body"]))
    if count == 0:
        problems.append(Problem("empty_file", "The input file has no requests", 1))
    return Checked(requests, problems)


def _problem(
    line: Any, endpoint: str, embedders: bool, config: Config, seen: set[str]
) -> tuple[str, str] | None:
    if isinstance(line, ValueError) or not isinstance(line, dict):
        return "invalid_json_line", "The line is not a JSON object"
    custom_id = line.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id or len(custom_id) > MAX_CUSTOM_ID:
        return "missing_custom_id", f"custom_id must be a string of 1 to {MAX_CUSTOM_ID} characters"
    if custom_id in seen:
        return "duplicate_custom_id", f"The custom_id {custom_id!r} is on an earlier line"
    if line.get("method") != "POST":
        return "invalid_method", "method must be POST"
    if line.get("url") != endpoint:
        return "invalid_url", f"url must be the batch's endpoint, {endpoint}"
    body = line.get("body")
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return "invalid_body", "body must be a JSON object with a model"
    if not serves(config, embedders, body["model"]):
        what = "embedder" if embedders else "agent or experiment"
        return "model_not_found", f"The model {body['model']!r} is no {what} of the gateway"
    return None


def serves(config: Config, embedders: bool, model: str) -> bool:
    """Whether ``model`` names an embedder (``embedders``), or an agent or experiment."""
    target = config.target(model)
    if embedders:
        return config.embedder(target) is not None
    return config.agent(target) is not None or config.experiment(target) is not None
