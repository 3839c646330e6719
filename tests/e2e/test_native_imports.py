"""The embedder and the NLP pipeline load in threads of their own at start, and both import
numpy first: numpy's first import is not safe from two threads at once (without the shared
lock, two threads importing spaCy and onnxruntime at once failed in 2 of 6 fresh processes here,
and CI saw "import numpy failed" from MiniLM under load). Each round is a fresh interpreter, where
numpy has not been imported yet; the collision depends on timing, so a pass before the fix is
possible, a failure after it is not."""

from __future__ import annotations

import subprocess
import sys

LOAD_BOTH = """
import threading
from polyg.embed.minilm import MiniLMEmbedder
from polyg.nlp.pipeline import pipeline

errors = []

def run(load):
    try:
        load()
    except Exception as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=run, args=(f,)) for f in (pipeline().load, MiniLMEmbedder().load)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not errors, errors
print("ok")
"""


def test_the_embedder_and_the_pipeline_load_at_once_in_fresh_processes() -> None:
    for _ in range(6):
        done = subprocess.run([sys.executable, "-c", LOAD_BOTH], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
