"""Log lines stay short whatever input they quote; records logged on an event loop are queued
after the loop's step."""

from __future__ import annotations

import asyncio
import json
import logging
import queue

from polyg.logs import MAX_FIELD_CHARS, JsonFormatter, _QueueingHandler, request_id


def test_a_huge_text_field_is_cut_in_the_log_line() -> None:
    huge = "x" * 1_000_000
    record = logging.makeLogRecord({"msg": "refused %s", "args": (huge,), "tool": huge, "code": 4002})
    line = JsonFormatter().format(record)
    assert len(line) < 3 * MAX_FIELD_CHARS, len(line)
    entry = json.loads(line)
    assert entry["msg"].startswith("refused xxx") and entry["msg"].endswith("(1000008 characters)")
    assert entry["tool"].endswith("(1000000 characters)")
    assert entry["code"] == 4002
    # Short fields are left whole.
    short = json.loads(JsonFormatter().format(logging.makeLogRecord({"msg": "ok", "tool": "get_entity"})))
    assert (short["msg"], short["tool"]) == ("ok", "get_entity")


def test_a_record_logged_on_an_event_loop_is_queued_after_the_loops_step() -> None:
    """The listener is woken only once the step that logged (a tool call's, which then writes
    its response) is over; the record keeps the request id of the call that logged it."""
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    logger = logging.getLogger("polyg.test.deferred")
    logger.propagate = False
    handler = _QueueingHandler(records)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    async def call() -> list[str]:
        token = request_id.set("rid-1")
        logger.info("first")
        logger.info("second")
        request_id.reset(token)
        during = records.qsize()
        await asyncio.sleep(0)
        queued = [records.get_nowait() for _ in range(records.qsize())]
        assert during == 0
        assert [r._polyg_rid for r in queued] == ["rid-1", "rid-1"]
        return [r.getMessage() for r in queued]

    try:
        assert asyncio.run(call()) == ["first", "second"]
        # Off any loop, a record is queued at once, after any still held.
        logger.info("third")
        assert records.get_nowait().getMessage() == "third"
    finally:
        logger.removeHandler(handler)


def test_held_records_are_queued_by_hand_over_in_order() -> None:
    """What a loop held when it stopped is queued by the next hand-over (flush_logs does one)."""
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    handler = _QueueingHandler(records)

    async def log_and_stop() -> None:
        for text in ("a", "b"):
            handler.handle(logging.makeLogRecord({"msg": text}))
        handler.hand_over()  # as flush_logs would, before the loop ran its callbacks
        assert [records.get_nowait().getMessage() for _ in range(2)] == ["a", "b"]

    asyncio.run(log_and_stop())
    assert records.empty()
