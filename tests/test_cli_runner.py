"""tests/cli_runner.py runs `polyg` in the test process as a subprocess ran it: these check what
the CLI tests rely on (a crash still shows as a traceback and exit 1, the environment is the
one given, and what the CLI changes process-wide is put back). None starts a database."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

import pytest

import polyg.config
from polyg import __version__, logs
from tests.cli_runner import run_cli
from tests.mcp_helpers import server_env


def test_a_crash_is_a_traceback_on_stderr_and_exit_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI tests assert "Traceback" not in stderr: that must be able to fail in process."""

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    # polyg.cli imports it when a command loads its settings (not at import: see _settings).
    monkeypatch.setattr(polyg.config, "load_settings", crash)
    done = run_cli(["status", "--data-dir", str(tmp_path / "data")], server_env(tmp_path))
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr and "RuntimeError: boom" in done.stderr
    assert done.stdout == ""


def test_the_command_sees_only_the_environment_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A developer's own setting, which server_env leaves out: the command must not see it.
    monkeypatch.setenv("POLYG_PROJECT", "not a project!")
    args = ["serve", "--transport", "http", "--port", "0", "--data-dir", str(tmp_path / "data")]
    done = run_cli(args, server_env(tmp_path))
    assert done.returncode == 2 and "port" in done.stderr and "project" not in done.stderr, done.stderr
    # And the test's own environment is back afterwards.
    assert os.environ["POLYG_PROJECT"] == "not a project!"
    assert run_cli(args, server_env(tmp_path, POLYG_PROJECT="not a project!")).stderr.count("project") >= 1


def test_logging_and_signal_handlers_are_put_back(tmp_path: Path) -> None:
    """`ingest` installs polyg's JSON logging (which removes every root handler, pytest's
    among them) before it refuses its chunk options."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    sigint = signal.getsignal(signal.SIGINT)
    args = ["ingest", str(tmp_path), "--chunk-size", "16", "--chunk-overlap", "16"]
    done = run_cli([*args, "--data-dir", str(tmp_path / "data")], server_env(tmp_path))
    assert done.returncode == 2 and done.stderr.startswith("Error: chunk overlap"), done.stderr
    assert (tmp_path / "logs" / "polyg.log").exists()  # the logging was set up
    assert root.handlers == handlers and root.level == level
    assert logs._listener is None  # flushed and stopped, as the process's exit did
    assert signal.getsignal(signal.SIGINT) is sigint


@pytest.mark.anyio
async def test_an_async_test_can_run_a_command(tmp_path: Path) -> None:
    """Each command runs its own event loop: from a running one it goes to a thread."""
    done = run_cli(["--version"], server_env(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (0, f"polyg {__version__}\n", "")
