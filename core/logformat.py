"""Every log line the process writes is one JSON object (requests, config reloads, the
server's own messages and tracebacks alike), so log shippers never meet a stray line."""

import asyncio
import json
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "pid", "event", "message", ...}`` on one line
    (``pid``: which process wrote it, when several serve: ``serve --workers``).

    Records logged with ``log_event`` carry their fields in ``record.fields``; any other
    record is an ``event: "log"`` with its formatted message (and traceback, if any).
    """

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        else:
            line["event"] = "log"
            line["message"] = record.getMessage()
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        try:
            return orjson.dumps(line, default=str).decode()
        except TypeError:  # a lone surrogate, an integer beyond 64 bits: the stdlib writes them
            return json.dumps(line, default=str)


def log_event(logger: logging.Logger, event: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log one structured event (``fields`` become keys of the JSON line)."""
    if logger.isEnabledFor(level):
        logger.log(level, event, extra={"fields": {"event": event, **fields}})


def log_stray_output() -> None:
    """Send what Python prints outside logging (warnings, exceptions in threads) through
    the JSON log, so stderr holds JSON lines only."""
    logging.captureWarnings(True)
    thread_logger = logging.getLogger("gateway.threads")

    def log_thread_exception(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return
        name = args.thread.name if args.thread is not None else "?"
        thread_logger.error(
            "exception in thread %s",
            name,
            exc_info=(args.exc_type, args.exc_value, args.exc_traceback),  # type: ignore[arg-type]
        )

    threading.excepthook = log_thread_exception


def log_failure(logger: logging.Logger, what: str) -> Callable[[asyncio.Future[Any]], None]:
    """A done-callback for work nobody waits for (a record queued to the writer): it
    logs the future's error, naming ``what`` could not be written."""

    def logged(done: asyncio.Future[Any]) -> None:
        if not done.cancelled() and (error := done.exception()) is not None:
            logger.error("could not write %s", what, exc_info=error)

    return logged
