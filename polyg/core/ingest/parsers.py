"""Documents out of files: Markdown (with YAML front matter), plain text, HTML, PDF and JSONL.

Each parser returns `Document`s whose text keeps the structure chunking respects: paragraphs
separated by a blank line, headings on a line of their own starting with `#`. A file gives one
document, except JSONL (one per line: `{title, authors, text, url?, date?}`).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

import yaml

from polyg.errors import InvalidParams, TextEncodingError


@dataclass(frozen=True)
class Document:
    """One article: `source` identifies it across runs (a file path, a JSONL line's url or title)."""

    title: str
    authors: tuple[str, ...]
    text: str
    source: str
    url: str | None = None
    date: str | None = None


FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*(?:\n|\Z)", re.DOTALL)
MARKDOWN_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def authors_of(value: Any) -> tuple[str, ...]:
    """`authors` as a list, or one string ("Alice, Bob" or "Alice and Bob")."""
    if value is None:
        return ()
    if isinstance(value, str):
        parts = re.split(r"\s*(?:,|;|\band\b|&)\s*", value)
    elif isinstance(value, list | tuple):
        parts = [str(v) for v in value if v is not None]
    else:
        parts = [str(value)]
    return tuple(dict.fromkeys(p.strip() for p in parts if p and p.strip()))


def _text_field(value: Any) -> str | None:
    return None if value is None else str(value).strip() or None


def parse_markdown(text: str, source: str, fallback_title: str) -> Document:
    meta: dict[str, Any] = {}
    match = FRONT_MATTER.match(text)
    if match:
        try:
            loaded = yaml.safe_load(match.group(1))
        except yaml.YAMLError as exc:
            raise InvalidParams(f"{source}: the front matter is not valid YAML ({exc}).") from exc
        meta = loaded if isinstance(loaded, dict) else {}
        text = text[match.end() :]
    heading = MARKDOWN_HEADING.search(text)
    title = _text_field(meta.get("title")) or (heading.group(1) if heading else None) or fallback_title
    authors = authors_of(meta.get("authors", meta.get("author")))
    return Document(title, authors, text.strip(), source, _text_field(meta.get("url")), _text_field(meta.get("date")))


def parse_text(text: str, source: str, fallback_title: str) -> Document:
    return Document(fallback_title, (), text.strip(), source)


class _HtmlText(HTMLParser):
    """Visible text by blocks: headings become `#` lines, block elements end a paragraph."""

    BLOCKS = frozenset({"p", "div", "li", "tr", "br", "section", "article", "blockquote", "pre", "table", "ul", "ol"})
    HEADINGS: ClassVar[dict[str, int]] = {f"h{i}": i for i in range(1, 7)}
    SKIP = frozenset({"script", "style", "noscript", "template", "head"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self.current: list[str] = []
        self.title: list[str] = []
        self.meta: dict[str, str] = {}
        self._skip = 0
        self._in_title = False
        self._heading = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag == "meta":
            values = dict(attrs)
            name, content = (values.get("name") or "").lower(), values.get("content")
            if name in ("author", "date") and content:
                self.meta[name] = content
        elif tag in self.SKIP:
            self._skip += 1
        elif tag in self.HEADINGS:
            self._end_block()
            self._heading = self.HEADINGS[tag]
        elif tag in self.BLOCKS:
            self._end_block()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self.SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in self.HEADINGS or tag in self.BLOCKS:
            self._end_block()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        elif not self._skip:
            self.current.append(data)

    def _end_block(self) -> None:
        text = " ".join("".join(self.current).split())
        if text:
            self.blocks.append(f"{'#' * self._heading} {text}" if self._heading else text)
        self.current = []
        self._heading = 0

    def close(self) -> None:
        super().close()
        self._end_block()


def parse_html(text: str, source: str, fallback_title: str) -> Document:
    parser = _HtmlText()
    parser.feed(text)
    parser.close()
    title = " ".join("".join(parser.title).split())
    if not title:
        heading = next((b.lstrip("# ") for b in parser.blocks if b.startswith("#")), None)
        title = heading or fallback_title
    authors = authors_of(parser.meta.get("author"))
    return Document(title, authors, "\n\n".join(parser.blocks), source, None, parser.meta.get("date"))


def parse_pdf(path: Path, source: str, fallback_title: str) -> Document:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(path)
        pages = [page.extract_text() or "" for page in reader.pages]
        info = reader.metadata
    except (PyPdfError, ValueError, KeyError, OSError) as exc:
        raise TextEncodingError(f"{source}: cannot read the PDF ({exc}).") from exc
    title = _text_field(info.title if info else None) or fallback_title
    authors = authors_of(info.author if info else None)
    # Page breaks end paragraphs; lines inside a page are joined back into paragraphs where
    # a blank line does not separate them.
    text = "\n\n".join(page.strip() for page in pages if page.strip())
    return Document(title, authors, text, source)


def parse_jsonl(text: str, source: str) -> Iterator[Document]:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidParams(f"{source} line {number}: not JSON ({exc.msg}).") from exc
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
            raise InvalidParams(f"{source} line {number}: expected an object with a non-empty 'text'.")
        title = _text_field(item.get("title")) or f"{Path(source).stem} #{number}"
        url = _text_field(item.get("url"))
        yield Document(
            title,
            authors_of(item.get("authors", item.get("author"))),
            item["text"].strip(),
            f"{source}#{url or title}",
            url,
            _text_field(item.get("date")),
        )


TextParser = Callable[[str, str, str], Document]
TEXT_PARSERS: dict[str, TextParser] = {
    ".md": parse_markdown,
    ".markdown": parse_markdown,
    ".txt": parse_text,
    ".text": parse_text,
    ".rst": parse_text,
    ".html": parse_html,
    ".htm": parse_html,
}
SUFFIXES = frozenset({*TEXT_PARSERS, ".pdf", ".jsonl"})


def read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TextEncodingError(
            f"{path} is not UTF-8 text (byte {exc.start}): convert it to UTF-8 and ingest it again."
        ) from exc


def parse_file(path: Path) -> list[Document]:
    """The documents of one file, by its suffix."""
    source = str(path.resolve())
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return [parse_pdf(path, source, path.stem)]
    if suffix == ".jsonl":
        return list(parse_jsonl(read_text(path), source))
    parser = TEXT_PARSERS.get(suffix)
    if parser is None:
        raise InvalidParams(
            f"{path}: cannot ingest {suffix or 'files without a suffix'}; use {', '.join(sorted(SUFFIXES))}."
        )
    return [parser(read_text(path), source, path.stem)]


def find_files(paths: Sequence[Path], include: Sequence[str] = ()) -> list[Path]:
    """Files named, and files under folders named (recursively) whose name matches an include
    pattern (default: every suffix a parser takes); sorted, each once."""
    found: dict[Path, None] = {}
    for path in paths:
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.is_file() and _included(child, include):
                    found.setdefault(child.resolve())
        elif path.is_file():
            found.setdefault(path.resolve())
        else:
            raise InvalidParams(f"{path}: no such file or folder.")
    return list(found)


def _included(path: Path, include: Sequence[str]) -> bool:
    if any(part.startswith(".") for part in path.parts[-1:]):
        return False
    if include:
        return any(fnmatch.fnmatch(path.name, pattern) or fnmatch.fnmatch(str(path), pattern) for pattern in include)
    return path.suffix.lower() in SUFFIXES
