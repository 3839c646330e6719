"""The Dockerfile's install, run outside Docker: its `pip install` in a clean virtual environment
with no compiler on PATH, then `polyg serve --transport http` from that environment.

Docker is not available where the tests run, so this is the nearest check that the image builds
without gcc (the base image has none) and serves: every dependency must come as a wheel, and the
embedded store's binaries must be the prebuilt, checksum-verified ones.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from tests.mcp_helpers import POLL_S, free_port, reap_embedded, server_env

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
# A fresh install from the local package index with pip's cache warm takes ~40 s here.
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


# pip's cache kept across runs (the image is built with none): the downloads, and nothing built
# here, since this install has no compiler. Bytecode is compiled when polyg imports a module
# rather than for every file of every dependency at install (most of the install's CPU).
PIP_CACHE = Path(tempfile.gettempdir()) / "polyg-test-pip-cache"


def cheaper(pip_args: list[str]) -> list[str]:
    """The Dockerfile's pip arguments with the run-to-run cache on and bytecode compiling off:
    what is installed, from where, and the no-compiler check stay the same."""
    return ["--no-compile", "--cache-dir", str(PIP_CACHE), *(a for a in pip_args if a != "--no-cache-dir")]


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

    venv = tmp_path / "venv"
    subprocess.run([str(tools / "python3"), "-m", "venv", str(venv)], env=env, check=True, timeout=120)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{tools}"
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *cheaper(dockerfile_pip_install())],
        cwd=app,
        env=env,
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
