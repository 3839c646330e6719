"""`polyg doctor` as a user runs it: each check printed OK, FAIL or SKIP with what to fix, and a
non-zero exit when one fails."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.mcp_helpers import polyg_command, reap_embedded, redis_servers_under, server_env


def doctor(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*polyg_command(), "doctor", *args],
        env=server_env(root, **env),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def lines_by_check(output: str) -> dict[str, str]:
    """The first line of each check, by the check's name."""
    found = {}
    for line in output.splitlines():
        outcome, _, rest = line.partition("  ")
        if outcome.strip() in {"OK", "FAIL", "SKIP"}:
            name = rest.strip().split("  ")[0]
            found[name] = outcome.strip()
    return found


def test_a_working_install_passes_every_check(tmp_path: Path) -> None:
    data = tmp_path / "data"
    try:
        result = doctor(tmp_path, "--data-dir", str(data))
    finally:
        reap_embedded(data)
    assert result.returncode == 0, result.stdout + result.stderr
    checks = lines_by_check(result.stdout)
    for name in ("config", "database binaries", "embedding model", "data directory", "store"):
        assert checks[name] == "OK", result.stdout
    # Present or not (it comes with the NLP extraction), the pipeline never fails the install here.
    assert checks["NLP pipeline"] in {"OK", "SKIP"}
    assert "sha256 as pinned" in result.stdout and "384 dimensions" in result.stdout
    assert "Everything checked is fine." in result.stdout
    assert redis_servers_under(tmp_path) == []  # the store it started is stopped again


def test_a_broken_config_fails_with_the_file_to_fix(tmp_path: Path) -> None:
    config = tmp_path / "polyg.yaml"
    config.write_text("toolsets: [kg\n  bad: : :\n")
    result = doctor(tmp_path, "--config", str(config), POLYG_EMBEDDING_PROVIDER="hashing")
    assert result.returncode == 1
    checks = lines_by_check(result.stdout)
    assert checks["config"] == "FAIL" and checks["store"] == "SKIP", result.stdout
    assert f"fix: correct {config}" in result.stdout
    assert "1 check failed." in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_an_unusable_data_directory_fails_and_the_store_is_not_tried(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = doctor(tmp_path, "--data-dir", str(blocker / "data"), POLYG_EMBEDDING_PROVIDER="hashing")
    assert result.returncode == 1
    checks = lines_by_check(result.stdout)
    assert checks["data directory"] == "FAIL" and checks["store"] == "SKIP", result.stdout
    assert "fix: pass --data-dir" in result.stdout


def test_an_unreachable_server_fails_the_store_check_without_a_trace(tmp_path: Path) -> None:
    result = doctor(tmp_path, "--store", "falkor://127.0.0.1:1", POLYG_EMBEDDING_PROVIDER="hashing")
    assert result.returncode == 1
    checks = lines_by_check(result.stdout)
    assert checks["store"] == "FAIL" and checks["database binaries"] == "SKIP", result.stdout
    assert "Cannot reach FalkorDB at 127.0.0.1:1" in result.stdout
    assert "fix: start the FalkorDB server" in result.stdout
    # The store's failed open cancels the model's warm-up: nothing is printed about it at exit.
    assert "Traceback" not in result.stderr and "never retrieved" not in result.stderr, result.stderr
