"""One lock for the first import of the native libraries polyg loads in background threads.

The embedder (onnxruntime, tokenizers) and the NLP pipeline (spaCy, thinc) are loaded in threads
of their own at start, and both import numpy. numpy's first import is not safe from two threads
at once: the loser fails with "import numpy failed" (seen as a MiniLM load error on a loaded
machine). Their imports take this lock, so one finishes before the other starts; what runs
after the imports (loading the model files) still overlaps.
"""

from __future__ import annotations

import threading

NATIVE_IMPORTS = threading.Lock()
