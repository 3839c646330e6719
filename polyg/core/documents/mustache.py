"""A Mustache renderer that renders values as mustache.js does (spec 000's template engine).

Spec 000 names Mustache on a JavaScript engine; templates written for it must read the same here.
Python renderers (chevron, pystache) follow Mustache's rules for tags but print values the
Python way: a list value `{{projects}}` comes out as `['a', 'b']`, `true` as `True`, `1.0` as
`1.0`. mustache.js prints them as JavaScript's `String(value)` does: `a,b`, `true`, `1`. This
module keeps Mustache's rules (variables, `{{{x}}}` / `{{&x}}` unescaped, sections over lists
and truthy values, inverted sections, comments, partials with standalone indentation, set
delimiters, dotted names, `{{.}}`, standalone lines) and prints values as JavaScript does.

Escaping: `{{x}}` escapes what mustache.js escapes (& < > " ' / backquote =); `{{{x}}}` and `{{&x}}`
do not. Values are never parsed as templates: a node whose name holds `{{secret}}` prints
`{{secret}}` (escaped or not), it is not evaluated (no template injection).

Truthiness is JavaScript's, as in mustache.js: `false`, `null`, `""`, `0` and `[]` skip a
section; an object or any other value renders it once with the value on top of the context.
A dotted name resolves its first part up the context stack and the rest inside that value only
(the Mustache spec's rule).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from polyg.errors import InvalidParams

MAX_PARTIAL_DEPTH = 16
# Sections inside sections, and partials counted as a level each when rendering: the renderer
# recurses once a level, and a template of 1,000 nested sections saved, then failed every render
# with Python's recursion limit (an internal error).
MAX_NESTING = 100
_ESCAPES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    '"': "&quot;",
    "'": "&#39;",
    "/": "&#x2F;",
    "`": "&#x60;",
    "=": "&#x3D;",
}
_ESCAPE_RE = re.compile(r"[&<>\"'`=/]")
_SIGILS = "#^/>{&=!"


class MustacheError(InvalidParams):
    """A template that does not parse."""


@dataclass
class Node:
    kind: str  # text, name, &, #, ^, >
    value: str
    children: list[Node] = field(default_factory=list)
    indent: str = ""  # a standalone partial's indentation


def escape_html(text: str) -> str:
    return _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group(0)], text)


def js_string(value: Any) -> str:
    """`String(value)` in JavaScript, for the JSON values query rows hold."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        # Array.prototype.join: null and undefined items print as nothing.
        return ",".join("" if item is None else js_string(item) for item in value)
    if isinstance(value, Mapping):
        return "[object Object]"
    return str(value)


def _js_number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:  # JavaScript writes 1e-7 and 1e+21 where Python writes 1e-07 and 1e+21
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        text = f"{mantissa}e{sign}{int(exponent.lstrip('+-'))}"
    return text


def truthy(value: Any) -> bool:
    """JavaScript truthiness as mustache.js applies it to a section's value."""
    if isinstance(value, float) and math.isnan(value):
        return False
    if isinstance(value, (list, tuple)):
        return len(value) > 0
    if isinstance(value, Mapping):
        return True
    return bool(value)


# --- parsing ------------------------------------------------------------------------------------


def parse(template: str) -> list[Node]:
    """The template's tree; MustacheError (4002) if it does not parse."""
    tokens = _standalone(_scan(template))
    return _nest(tokens)


@dataclass
class _Token:
    kind: str
    value: str
    pos: int = 0
    standalone_candidate: bool = False
    indent: str = ""
    first_on_line: bool = False


def _scan(template: str) -> list[list[_Token]]:
    """Tokens, one list per line (a line's tokens end with its newline text token)."""
    open_tag, close_tag = "{{", "}}"
    lines: list[list[_Token]] = [[]]
    pos = 0
    text_start = 0

    def add_text(text: str, at: int) -> None:
        for part in re.split(r"(?<=\n)", text):
            if part:
                lines[-1].append(_Token("text", part, at))
                at += len(part)
                if part.endswith("\n"):
                    lines.append([])

    while True:
        start = template.find(open_tag, pos)
        if start < 0:
            add_text(template[text_start:], text_start)
            break
        add_text(template[text_start:start], text_start)
        inner_start = start + len(open_tag)
        kind = template[inner_start] if inner_start < len(template) and template[inner_start] in _SIGILS else "name"
        if kind == "{":
            end = template.find("}" + close_tag, inner_start)
            if end < 0:
                raise MustacheError(f"Template error: unclosed tag '{{{{{{' at character {start}.")
            value = template[inner_start + 1 : end].strip()
            pos = end + 1 + len(close_tag)
            kind = "&"
        else:
            end = template.find(close_tag, inner_start)
            if end < 0:
                raise MustacheError(f"Template error: unclosed tag at character {start}.")
            body = template[inner_start + (0 if kind == "name" else 1) : end]
            value = body.strip()
            pos = end + len(close_tag)
            if kind == "=":
                if not value.endswith("="):
                    raise MustacheError(f"Template error: bad delimiter change at character {start}.")
                parts = value[:-1].split()
                if len(parts) != 2 or any("=" in p for p in parts):
                    raise MustacheError(f"Template error: bad delimiter change at character {start}.")
                open_tag, close_tag = parts
        if kind not in ("!", "=") and not value:
            raise MustacheError(f"Template error: empty tag at character {start}.")
        if kind not in ("!", "=", "name", "&") and not _valid_name(value, kind):
            raise MustacheError(f"Template error: invalid tag name {value!r} at character {start}.")
        lines[-1].append(_Token(kind, value, start))
        text_start = pos
    return lines


def _valid_name(value: str, kind: str) -> bool:
    return kind == ">" or not any(ch.isspace() for ch in value)


def _standalone(lines: list[list[_Token]]) -> list[_Token]:
    """Drops the whitespace and line end around a section, inverted, closing, comment, partial
    or delimiter tag alone on its line (Mustache's standalone rule)."""
    out: list[_Token] = []
    for line in lines:
        tags = [t for t in line if t.kind != "text"]
        texts = [t for t in line if t.kind == "text"]
        blank = all(t.value.strip() == "" for t in texts)
        if len(tags) == 1 and blank and tags[0].kind in "#^/>!=":
            tag = tags[0]
            if tag.kind == ">":
                before = line[: line.index(tag)]
                tag.indent = "".join(t.value for t in before)
            out.append(tag)
            continue
        out.extend(line)
    return out


def _nest(tokens: list[_Token]) -> list[Node]:
    root: list[Node] = []
    stack: list[tuple[Node, list[Node]]] = []
    current = root
    for token in tokens:
        if token.kind in ("!", "="):
            continue
        if token.kind in ("#", "^"):
            if len(stack) >= MAX_NESTING:
                raise MustacheError(
                    f"Template error: sections nest deeper than {MAX_NESTING} levels at character {token.pos}."
                )
            node = Node(token.kind, token.value)
            current.append(node)
            stack.append((node, current))
            current = node.children
        elif token.kind == "/":
            if not stack:
                raise MustacheError(f"Template error: closing tag {{{{/{token.value}}}}} without an opening tag.")
            node, parent = stack.pop()
            if node.value != token.value:
                raise MustacheError(
                    f"Template error: section {{{{#{node.value}}}}} is closed by {{{{/{token.value}}}}}."
                )
            current = parent
        elif token.kind == "text":
            if current and current[-1].kind == "text":
                current[-1].value += token.value
            else:
                current.append(Node("text", token.value))
        else:
            current.append(Node(token.kind, token.value, indent=token.indent))
    if stack:
        raise MustacheError(f"Template error: section {{{{#{stack[-1][0].value}}}}} is never closed.")
    return root


def partial_names(tree: Sequence[Node]) -> set[str]:
    names: set[str] = set()
    for node in tree:
        if node.kind == ">":
            names.add(node.value)
        names |= partial_names(node.children)
    return names


# --- rendering ----------------------------------------------------------------------------------

_MISSING = object()
# A partial's source by name (None: no such partial).
Partials = Callable[[str], str | None]


def render(tree: Sequence[Node], data: Mapping[str, Any], partials: Partials | None = None) -> str:
    out: list[str] = []
    _render(tree, [data], partials or (lambda _name: None), out, 0, 0)
    return "".join(out)


def render_text(template: str, data: Mapping[str, Any], partials: Mapping[str, str] | None = None) -> str:
    return render(parse(template), data, dict(partials or {}).get)


def _lookup(name: str, stack: list[Any]) -> Any:
    if name == ".":
        return stack[-1]
    first, *rest = name.split(".")
    value: Any = _MISSING
    for frame in reversed(stack):
        if isinstance(frame, Mapping) and first in frame:
            value = frame[first]
            break
    if value is _MISSING:
        return None
    for part in rest:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return None
    return value


def _render(tree: Sequence[Node], stack: list[Any], partials: Partials, out: list[str], depth: int, level: int) -> None:
    """`depth`: partials entered; `level`: sections and partials entered (see MAX_NESTING)."""
    if level > MAX_NESTING:
        raise MustacheError(f"Template error: sections and partials nest deeper than {MAX_NESTING} levels.")
    for node in tree:
        kind = node.kind
        if kind == "text":
            out.append(node.value)
        elif kind == "name":
            out.append(escape_html(js_string(_lookup(node.value, stack))))
        elif kind == "&":
            out.append(js_string(_lookup(node.value, stack)))
        elif kind == "#":
            value = _lookup(node.value, stack)
            if not truthy(value):
                continue
            items = value if isinstance(value, (list, tuple)) else [value]
            for item in items:
                stack.append(item)
                _render(node.children, stack, partials, out, depth, level + 1)
                stack.pop()
        elif kind == "^":
            if not truthy(_lookup(node.value, stack)):
                _render(node.children, stack, partials, out, depth, level + 1)
        elif kind == ">":
            _partial(node, stack, partials, out, depth, level + 1)


def _partial(node: Node, stack: list[Any], partials: Partials, out: list[str], depth: int, level: int) -> None:
    if depth >= MAX_PARTIAL_DEPTH:
        raise MustacheError(f"Template error: partials nest deeper than {MAX_PARTIAL_DEPTH} levels.")
    source = partials(node.value)
    if source is None:
        return  # Mustache: a missing partial renders as nothing
    if node.indent:
        # A standalone partial's indentation goes before each line of its template (not of the
        # values it prints).
        lines = source.split("\n")
        source = "\n".join(node.indent + line if line or i < len(lines) - 1 else line for i, line in enumerate(lines))
    _render(parse(source), stack, partials, out, depth + 1, level)
