"""Log lines stay short whatever input they quote."""

from __future__ import annotations

import json
import logging

from polyg.logs import MAX_FIELD_CHARS, JsonFormatter


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
