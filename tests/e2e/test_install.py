"""The Dockerfile's install, run outside Docker: its `pip install` in a clean virtual environment
with no compiler on PATH, then `polyg serve --transport http` from that environment.

Docker is not available where the tests run, so this is the nearest check that the image builds
without gcc (the base image has none) and serves: every dependency must come as a wheel, and the
embedded store's binaries must be the prebuilt, checksum-verified ones.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.mcp_helpers import POLL_S, free_port, reap_embedded, server_env

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
# A fresh install downloads ~185 MB of wheels: 20-45 s here, more on a slow link.
INSTALL_TIMEOUT_S = 600


def dockerfile_pip_install() -> list[str]:
    """The arguments of the Dockerfile's `pip install` (in a RUN line), e.g. ['--no-cache-dir', '.']."""
    match = re.search(r"^RUN .*?\bpip install ([^&\n]+)", DOCKERFILE.read_text(), re.MULTILINE)
    assert match, "the Dockerfile installs polyg with pip install"
    return match.group(1).split()


def dockerfile_copies() -> list[str]:
    """What the Dockerfile copies into the image before installing (paths in the repository)."""
    sources: list[str] = []
    for line in DOCKERFILE.read_text().splitlines():
        if line.startswith("COPY "):
            *paths, _dest = line.split()[1:]
            sources += paths
    return sources


def cheaper(pip_args: list[str]) -> list[str]:
    """The Dockerfile's pip arguments with bytecode compiling off (most of the install's CPU;
    polyg's modules are compiled when imported): what is installed, from where, and the
    no-compiler check stay the same. (A pip cache kept across runs saved nothing: the package
    index's answers are not stored, so every run downloads the wheels again.)"""
    return ["--no-compile", *pip_args]


# The install writes ~550 MB of small files. On the test machines' disk that took 31 s against
# 9 s in memory, with the same wheels and the same CPU, so the virtual environment and pip's
# scratch files go to a memory-backed directory when there is one with room enough.
MEMORY_FS = Path("/dev/shm")
MEMORY_FS_ROOM = 2 * 1024**3


@contextlib.contextmanager
def install_dir(fallback: Path) -> Iterator[Path]:
    """A scratch directory for the virtual environment: in memory when possible, else `fallback`."""
    try:
        stat = os.statvfs(MEMORY_FS)
        roomy = os.access(MEMORY_FS, os.W_OK) and stat.f_bavail * stat.f_frsize >= MEMORY_FS_ROOM
    except OSError:
        roomy = False
    if not roomy:
        yield fallback
        return
    scratch = Path(tempfile.mkdtemp(prefix="polyg-install-", dir=MEMORY_FS))
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def base_python() -> str:
    """The Python of the Dockerfile's base image when this machine has it, else the tests' own
    (the wheel covers CPython 3.12 and 3.13 alike)."""
    version = re.search(r"^FROM python:(\d+\.\d+)", DOCKERFILE.read_text(), re.MULTILINE)
    if version:
        found = subprocess.run(
            [f"python{version.group(1)}", "-c", "import sys; print(sys.executable)"],
            capture_output=True,
            text=True,
            check=False,
        )
        if found.returncode == 0 and found.stdout.strip():
            return found.stdout.strip()
    return os.path.realpath(getattr(sys, "_base_executable", sys.executable))


def no_compiler_env(root: Path, bin_dir: Path) -> dict[str, str]:
    """An environment whose PATH holds only a python symlink (and the venv's scripts), with the
    compiler variables pointing at `false`: any attempt to build C code fails."""
    env = server_env(root)
    env.update(PATH=f"{bin_dir}", CC="false", CXX="false", LDSHARED="false")
    return env


def test_dockerfile_install_needs_no_compiler_and_serves_http(tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    for source in dockerfile_copies():
        target = app / source
        if (ROOT / source).is_dir():
            shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / source, target)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "python3").symlink_to(base_python())
    env = no_compiler_env(tmp_path / "server", tools)
    for compiler in ("gcc", "cc", "make", "c++"):
        assert shutil.which(compiler, path=env["PATH"]) is None

    with install_dir(tmp_path) as scratch:
        install_and_serve(app, tools, env, scratch, tmp_path)


def install_and_serve(app: Path, tools: Path, env: dict[str, str], scratch: Path, tmp_path: Path) -> None:
    venv = scratch / "venv"
    subprocess.run([str(tools / "python3"), "-m", "venv", str(venv)], env=env, check=True, timeout=120)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{tools}"
    (scratch / "pip-tmp").mkdir()
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *cheaper(dockerfile_pip_install())],
        cwd=app,
        env={**env, "TMPDIR": str(scratch / "pip-tmp")},
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr

    resolved = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import polyg; from polyg.store.binaries import embedded_binaries; print('\\n'.join(embedded_binaries()))",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert resolved.returncode == 0, resolved.stderr
    server_binary, module = resolved.stdout.split()
    # The binaries are the installed wheel's, not a build or anything of the test's environment.
    assert Path(server_binary).is_relative_to(venv) and Path(module).is_relative_to(venv)

    # The image's command: `polyg serve` over HTTP, here on a loopback port.
    port = free_port()
    data = tmp_path / "data"
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [str(venv / "bin" / "polyg"), "serve", "--transport", "http", "--port", str(port), "--data-dir", str(data)],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
    )
    try:
        body = wait_healthy(proc, port, tmp_path / "serve.log")
        assert body["status"] == "ok", body
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        reap_embedded(data)


def wait_healthy(proc: subprocess.Popen[bytes], port: int, log: Path, timeout: float = 120.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            pytest.fail(f"polyg serve exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        try:
            body = dict(httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json())
            if body.get("status") != "loading":
                return body
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"polyg serve did not answer /health:\n{log.read_text(errors='replace')}")
        time.sleep(POLL_S)
