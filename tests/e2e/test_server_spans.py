"""The SDK's OpenTelemetry span around each request is kept only when spans are recorded."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from mcp.server._otel import OpenTelemetryMiddleware
from opentelemetry import trace

from polyg.config import load_settings
from polyg.embed import create_embedder
from polyg.runtime.app import Polyg
from polyg.server import build_server, spans_recorded


class RecordingProvider(trace.TracerProvider):
    """A provider set by a host that records spans (its tracer here records nothing)."""

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return trace.NoOpTracer()


def wraps_in_spans(core: Polyg) -> bool:
    server, _ = build_server(core)
    return any(isinstance(m, OpenTelemetryMiddleware) for m in server.middleware)


def test_requests_are_wrapped_in_spans_only_when_a_provider_records_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.startswith(("POLYG_", "FALKORDB_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    core = Polyg(load_settings(None, data_dir=tmp_path / "data"), embedder=create_embedder("hashing"))
    assert not spans_recorded(trace.ProxyTracerProvider())
    assert not spans_recorded(trace.NoOpTracerProvider())
    assert spans_recorded(RecordingProvider())
    # No provider set in this process: the default one drops every span.
    assert not wraps_in_spans(core)
    monkeypatch.setattr(trace, "get_tracer_provider", RecordingProvider)
    assert wraps_in_spans(core)
