"""The `polyg` command line: mistakes end in one `Error:` line and a non-zero exit, never a
traceback, and before anything is started or written.

The commands run in the test process (tests/cli_runner.py: the CLI's own click command with
the environment, streams and exit code a subprocess had). Real `python -m polyg` processes
remain where the process is the point: `test_version` (the module entry point, its exit status
and its output as a shell sees them) and `test_a_one_shot_command_does_not_load_the_english_pipeline`
(what a fresh interpreter imports, which a process that has imported everything cannot tell).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from polyg import __version__
from tests.cli_runner import Completed, run_cli, run_process
from tests.fork_runner import REAL_POLYG
from tests.mcp_helpers import polyg_command, server_env

FAST = {"POLYG_EMBEDDING_PROVIDER": "hashing"}


def polyg(root: Path, *args: str, **env: str) -> Completed:
    """`polyg ARGS` in this process, in the environment a server rooted at `root` gets."""
    root.mkdir(parents=True, exist_ok=True)
    return run_cli(args, server_env(root, **FAST, **env))


def polyg_process(root: Path, *args: str, **env: str) -> Completed:
    """`python -m polyg ARGS` in a process of its own."""
    root.mkdir(parents=True, exist_ok=True)
    return run_process([*polyg_command(), *args], server_env(root, **FAST, **env), timeout=120)


def assert_refused(done: Completed, *words: str) -> None:
    assert done.returncode != 0, done
    assert done.stderr.startswith("Error: "), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in done.stderr, (word, done.stderr)
    assert done.stdout == ""


def test_version(tmp_path: Path) -> None:
    done = polyg_process(tmp_path, "--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"polyg {__version__}\n", "")


@pytest.mark.parametrize(
    ("args", "env", "words"),
    [
        (["--port", "99999"], {}, ["port", "99999", "1-65535"]),
        (["--port", "0"], {}, ["port"]),
        ([], {"POLYG_PORT": "70000"}, ["port", "70000"]),
        (["--project", "not a project!"], {}, ["project", "'not a project!'"]),
        ([], {"POLYG_PROJECT": "x" * 65}, ["project"]),
    ],
    ids=["port-flag", "port-zero", "port-env", "project-flag", "project-env"],
)
def test_a_bad_setting_is_refused_at_start(
    tmp_path: Path, args: list[str], env: dict[str, str], words: list[str]
) -> None:
    done = polyg(tmp_path, "serve", "--transport", "http", "--data-dir", str(tmp_path / "data"), *args, **env)
    assert_refused(done, *words)
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("command", ["serve", "export", "import"])
def test_a_project_id_is_checked_before_the_store_opens(tmp_path: Path, command: str) -> None:
    source = tmp_path / "memory.jsonl"
    source.write_text("")
    args = [str(source)] if command == "import" else []
    done = polyg(tmp_path, command, *args, "--data-dir", str(tmp_path / "data"), "--project", "../etc")
    assert_refused(done, "project", "'../etc'")
    assert not (tmp_path / "data" / "db").exists()


@pytest.mark.parametrize("command", ["serve", "status", "export"])
def test_an_unusable_data_dir_is_an_error_line(tmp_path: Path, command: str) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory\n")
    for data_dir in (a_file, a_file / "below"):
        done = polyg(tmp_path, command, "--data-dir", str(data_dir))
        assert_refused(done, str(data_dir))


def test_an_unusable_log_dir_is_an_error_line(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    done = polyg(tmp_path, "serve", "--data-dir", str(tmp_path / "data"), POLYG_LOG_DIR=str(a_file))
    assert_refused(done, "log")


def test_export_into_a_missing_folder_is_an_error_line(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "folder" / "out.json"
    done = polyg(tmp_path, "export", "--data-dir", str(tmp_path / "data"), "-o", str(target))
    assert_refused(done, str(target.parent))
    assert not target.parent.exists()


def test_exporting_a_project_that_does_not_exist_says_so_and_writes_nothing(
    no_database_left_behind: None, tmp_path: Path
) -> None:
    """Each command starts the data dir's database and stops it again (none left running)."""
    data = tmp_path / "data"
    source = tmp_path / "memory.jsonl"
    source.write_text('{"type": "entity", "name": "Ada", "entityType": "person", "observations": ["math"]}\n')
    imported = polyg(tmp_path, "import", str(source), "--data-dir", str(data), "--project", "real")
    assert imported.returncode == 0, imported.stderr
    target = tmp_path / "out.jsonl"
    for fmt in ("json", "memory-jsonl"):
        done = polyg(
            tmp_path, "export", "--data-dir", str(data), "--project", "mistyped", "--format", fmt, "-o", str(target)
        )
        assert_refused(done, "'mistyped'", "does not exist", "real")
        assert not target.exists()
        to_stdout = polyg(tmp_path, "export", "--data-dir", str(data), "--project", "mistyped", "--format", fmt)
        assert_refused(to_stdout, "'mistyped'")
    exported = polyg(tmp_path, "export", "--data-dir", str(data), "--project", "real", "--format", "memory-jsonl")
    assert exported.returncode == 0, exported.stderr
    assert '"Ada"' in exported.stdout


def _imported_modules(root: Path, *args: str) -> set[str]:
    """The modules `polyg ARGS` imported (Python's own import timing), the command having succeeded."""
    python, *module = REAL_POLYG  # what a real start imports: a fork would have it all already
    done = subprocess.run(
        [python, "-X", "importtime", *module, *args, "--data-dir", str(root / "data")],
        capture_output=True,
        text=True,
        timeout=120,
        env=server_env(root, **FAST),
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize("command", ["import", "export"])
def test_a_one_shot_command_does_not_load_the_english_pipeline(tmp_path: Path, command: str) -> None:
    """import and export move stored items: the pipeline (remember's parser, about 1.5 s of CPU
    and 90 MB) is a server's to load at start, a command's only on its first parse."""
    lines = tmp_path / "in.jsonl"
    lines.write_text('{"type": "entity", "name": "Ada", "entityType": "person", "observations": ["a"]}\n')
    imported = _imported_modules(tmp_path, "import", str(lines))
    if command == "export":
        imported = _imported_modules(tmp_path, "export", "-o", str(tmp_path / "out.json"))
    assert "polyg.cli" in imported  # the timing lists what the process imported
    # Any of its modules: the process may end while the pipeline's own import is still under way.
    assert not [name for name in imported if name.split(".")[0] == "spacy"]
