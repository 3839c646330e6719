"""Static bounds on template variable queries (user Cypher): what the database cannot stop.

FalkorDB stops a query at its TIMEOUT between operations (scans, expands, UNWIND rows), and
its per-query memory capacity counts some of its allocations. Neither reaches inside one
expression: measured on FalkorDB 4.16 with a 1 s TIMEOUT and a 100 MB capacity,
`reduce(s = 0, x IN range(1, 100000000) | s + x)` ran 13.7 s, a comprehension over the same
range 23.6 s, `reduce(s = 'a', i IN range(1, 28) | replace(s, 'a', 'aa'))` 14.8 s, eight nested
comprehensions over an 8-item list 9.2 s, and a constant `range(1, 100000000)` is evaluated
while the query is planned (by GRAPH.EXPLAIN too), before any limit applies: 12 s and 4 GB.
So a query is refused before it runs when it holds:

- `reduce(...)`: its accumulator can grow each step (`s + s` doubles it), without bound;
  UNWIND with sum() or collect() does the same work in operations the TIMEOUT stops;
- `range(...)` whose bounds are not integer literals or `size(...)` of a list (plus or minus
  a literal): a computed bound has no limit, and `size(list)` is no longer than a list the
  query already holds; the literal ranges of a query together (their lengths multiplied, as
  they may nest) at most `MAX_RANGE_ITEMS`;
- iterations (list and pattern comprehensions, any/all/none/single) nested deeper than
  `MAX_NESTED_ITERATION`: each level multiplies the work by a list's length.

What this does not bound: a value doubled by a chain of `WITH s + s AS s` clauses (each is
an operation, but one step is not interrupted), and quadratic work over a large list the
graph itself returns. The per-query memory capacity (`polyg.store.falkor.QUERY_MEM_CAPACITY`)
and the TIMEOUT between operations are what remain for those.
"""

from __future__ import annotations

import functools
import re

from polyg.errors import InvalidParams
from polyg.store.queries.user_cypher import code_only

MAX_RANGE_ITEMS = 10_000
MAX_NESTED_ITERATION = 2

_CALL = re.compile(r"(?<![\w.$])(reduce|range|any|all|none|single|extract|filter)\s*\(", re.IGNORECASE)
_INTEGER = re.compile(r"[+-]?\s*\d+")
_SIZE_OF = re.compile(r"size\s*\((?P<inner>.*)\)\s*(?:[+-]\s*\d+)?", re.IGNORECASE | re.DOTALL)
# After `[`: `x IN` opens a list comprehension, `(` or `p = (` a pattern comprehension.
_COMPREHENSION = re.compile(r"\[\s*(?:\w+\s+IN\b|(?:\w+\s*=\s*)?\()", re.IGNORECASE)
_ITERATING = frozenset({"any", "all", "none", "single", "extract", "filter"})


class UnboundedQuery(InvalidParams):
    """A template query the database could not stop once it runs."""


def _closing(code: str, start: int) -> int:
    """Index of the bracket closing the one at `start` (or the end of the text)."""
    depth = 0
    for i in range(start, len(code)):
        if code[i] in "([{":
            depth += 1
        elif code[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return len(code)


def _arguments(code: str, open_at: int) -> list[str]:
    """The top-level arguments of the call whose `(` is at `open_at`."""
    close = _closing(code, open_at)
    args: list[str] = []
    depth, start = 0, open_at + 1
    for i in range(open_at + 1, close):
        if code[i] in "([{":
            depth += 1
        elif code[i] in ")]}":
            depth -= 1
        elif code[i] == "," and depth == 0:
            args.append(code[start:i].strip())
            start = i + 1
    args.append(code[start:close].strip())
    return args


def _range_length(args: list[str]) -> int | None:
    """Items of a range of literal bounds; None when a bound is `size(...)`; raises when a
    bound is anything else."""
    literal = True
    for arg in args:
        if _INTEGER.fullmatch(arg):
            continue
        size_of = _SIZE_OF.fullmatch(arg)
        if size_of is None or _closing(arg, arg.index("(")) != arg.rindex(")"):
            raise UnboundedQuery(
                f"range({', '.join(args)}) has a bound that is not an integer literal or size(...) "
                f"of a list; a template query's ranges hold at most {MAX_RANGE_ITEMS} items."
            )
        literal = False
    if not literal or len(args) not in (2, 3):
        return None
    start, end = int(args[0].replace(" ", "")), int(args[1].replace(" ", ""))
    step = int(args[2].replace(" ", "")) if len(args) == 3 else 1
    if step == 0:
        return None  # the database refuses it
    return max(0, (end - start) // step + 1)


def _nesting(code: str) -> int:
    """The deepest nesting of iterations (comprehensions, any/all/none/single) in the code."""
    deepest = 0
    stack: list[bool] = []  # per open bracket: does it iterate?
    for i, c in enumerate(code):
        if c in "([{":
            iterates = False
            if c == "[":
                iterates = _COMPREHENSION.match(code, i) is not None
            elif c == "(":
                word = re.search(r"(?<![\w.$])(\w+)\s*$", code[max(0, i - 16) : i])
                iterates = word is not None and word.group(1).lower() in _ITERATING
            stack.append(iterates)
            deepest = max(deepest, sum(stack))
        elif c in ")]}" and stack:
            stack.pop()
    return deepest


@functools.lru_cache(maxsize=1024)
def check(query: str) -> None:
    """Raises UnboundedQuery (4002, with the reason) for a query the database could not stop."""
    code = code_only(query)
    literal_items = 1
    for call in _CALL.finditer(code):
        name = call.group(1).lower()
        if name == "reduce":
            raise UnboundedQuery(
                "reduce() is not allowed in a template query: the database cannot stop it once it "
                "runs. Use UNWIND with sum() or collect() instead."
            )
        if name == "range":
            length = _range_length(_arguments(code, call.end() - 1))
            if length is not None:
                literal_items *= max(length, 1)
                if literal_items > MAX_RANGE_ITEMS:
                    raise UnboundedQuery(
                        f"The query's ranges hold more than {MAX_RANGE_ITEMS} items together "
                        "(nested ranges multiply); a template query reads from its node, it does "
                        "not count."
                    )
    depth = _nesting(code)
    if depth > MAX_NESTED_ITERATION:
        raise UnboundedQuery(
            f"The query nests {depth} list iterations (comprehensions, any/all/none/single); the "
            f"limit is {MAX_NESTED_ITERATION}: each level multiplies the work."
        )
