"""JSON-lines logging to stderr and a rotating file, with one request id per tool call.

stdout belongs to the MCP protocol in stdio mode, so no handler here ever writes to it.

Records are formatted and written by a listener thread: a tool call's log line (JSON encoding,
two writes and flushes, the rotating file's size check) cost about 0.2 ms on the event loop,
a tenth of a get_entity round trip. The calling thread only stamps the record with its request
id and queues it. A record logged on an event loop is queued once the loop has finished the
step it was logged in: queueing wakes the listener, which then takes the interpreter lock
while the step is still serialising and writing the call's response (the tool call's log line
is written just before). `flush_logs()` (also run at exit) writes out whatever is queued.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextvars
import json
import logging
import logging.handlers
import queue
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("polyg_request_id", default=None)

_STANDARD_ATTRS = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
# Extra fields left out of the JSON line: uvicorn adds `color_message`, its message again with
# terminal colour codes, which showed up as escape sequences in every `make run` line.
_DROPPED_EXTRAS = {"color_message"}
# A text field longer than this is cut: log lines quote bad input, and fifty lines of a 1 MB
# input would rotate every useful line out of the log.
MAX_FIELD_CHARS = 1000


def _bounded(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_FIELD_CHARS:
        return f"{value[:MAX_FIELD_CHARS]}... ({len(value)} characters)"
    return value


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        # Formatted once per record: the rotating file's size check formats it too.
        cached: str | None = record.__dict__.get("_polyg_json")
        if cached is None:
            cached = record._polyg_json = self._format(record)
        return cached

    def _format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": _bounded(record.getMessage()),
        }
        # Stamped by the queueing handler in the calling thread (the context var is not set in
        # the listener's); records handled directly read it here.
        rid = record.__dict__.get("_polyg_rid", request_id.get())
        if rid:
            entry["request_id"] = rid
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRS and key not in _DROPPED_EXTRAS and not key.startswith("_"):
                entry[key] = _bounded(value)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def new_request_id() -> str:
    return uuid.uuid4().hex[:16]


class _QueueingHandler(logging.handlers.QueueHandler):
    """Queues records unformatted (the listener formats them), stamped with the request id; on
    an event loop, after the loop's current step (see the module's docstring)."""

    def __init__(self, records: queue.SimpleQueue[logging.LogRecord]) -> None:
        super().__init__(records)
        self._held: collections.deque[logging.LogRecord] = collections.deque()

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        record._polyg_rid = request_id.get()
        return record

    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop in this thread: queued now, after any held records
            self.hand_over()
            self.queue.put_nowait(record)
            return
        self._held.append(record)
        # One callback a record, on the loop it was logged on: a loop that stops before running
        # it leaves its records to the next hand-over (any later record, or flush_logs).
        loop.call_soon(self.hand_over)

    def hand_over(self) -> None:
        """Queue the held records, oldest first."""
        while True:
            try:
                record = self._held.popleft()
            except IndexError:
                return
            self.queue.put_nowait(record)


_listener: logging.handlers.QueueListener | None = None
_listener_lock = threading.Lock()


def flush_logs() -> None:
    """Write out every queued record and stop the listener (records logged later are dropped)."""
    global _listener
    for handler in logging.getLogger().handlers:
        if isinstance(handler, _QueueingHandler):
            handler.hand_over()
    with _listener_lock:
        if _listener is not None:
            _listener.stop()
            _listener = None


class RetainingFileHandler(logging.handlers.RotatingFileHandler):
    """Rotates at a size, keeping `backupCount` files, and deletes rotated files older than
    `retention_s` (0: kept until rotated out)."""

    def __init__(self, path: Path, *, max_bytes: int, backup_count: int, retention_s: float) -> None:
        super().__init__(path, maxBytes=max_bytes, backupCount=backup_count, encoding="utf-8")
        self.retention_s = retention_s
        self.prune()

    def doRollover(self) -> None:
        super().doRollover()
        self.prune()

    def prune(self) -> None:
        if not self.retention_s:
            return
        base = Path(self.baseFilename)
        cutoff = time.time() - self.retention_s
        for rotated in base.parent.glob(base.name + ".*"):
            try:
                if rotated.stat().st_mtime < cutoff:
                    rotated.unlink()
            except OSError:
                pass  # another process rotated or removed it first


def setup_logging(
    level: str,
    log_dir: Path | None,
    *,
    max_bytes: int = 10 * 1024 * 1024,
    backup_count: int = 5,
    retention_days: float = 0,
    stderr_level: str | None = None,
) -> None:
    """Route every logger through JSON handlers on stderr (at `stderr_level`, default `level`)
    and, if given, a rotating file in `log_dir` (rotated at `max_bytes`, `backup_count` files
    kept, none older than `retention_days` when set)."""
    global _listener
    flush_logs()
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    formatter = JsonFormatter()
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(formatter)
    if stderr_level is not None:
        stderr.setLevel(stderr_level)
    handlers: list[logging.Handler] = [stderr]
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        rotating = RetainingFileHandler(
            log_dir / "polyg.log",
            max_bytes=max_bytes,
            backup_count=backup_count,
            retention_s=retention_days * 86400,
        )
        rotating.setFormatter(formatter)
        handlers.append(rotating)
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    with _listener_lock:
        _listener = logging.handlers.QueueListener(records, *handlers)
        _listener.start()
    root.addHandler(_QueueingHandler(records))
    root.setLevel(level)
    # Third-party chatter (per-request INFO lines) would drown our own request log.
    for noisy in ("mcp", "httpx", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))


atexit.register(flush_logs)
