"""A seeded fuzzer for every tool a polyg server lists, through the real MCP client.

Inputs come from each tool's published `inputSchema`: schema-valid ones (strings, numbers,
lists and objects within the schema's bounds, with ids and names the server returned earlier so
that calls reach real data), invalid ones (a required field dropped, an unknown field, a wrong
type, a value out of range, off its pattern or enum) and injections (Cypher quotes and
backticks, NUL and control characters, huge strings, unicode, nested mustache) put in place of
one string of a valid input.

A finding is what no input may cause: an internal error (4000), a store error (2004), a result
whose structuredContent breaks the tool's `outputSchema` (or a success without it), a protocol
error, a call that does not answer within its time limit, or the server going away.

The generator is our own rather than hypothesis-jsonschema: the run must be one fixed sequence
of calls for a seed against a server whose state each call changes, with no shrinking re-runs,
and bounded by a number of calls. The schedule (tool order, mode, mutation, injection) comes from
its own random stream, so it is the same on every run of a seed; values drawn from ids the server
made (random on each run) come from another.
"""

from __future__ import annotations

import copy
import json
import random
import re
import string
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import anyio
import jsonschema
from mcp import Client
from mcp.shared.exceptions import MCPError

MODES = ("valid", "invalid", "injection")
MODE_WEIGHTS = (0.45, 0.25, 0.30)
FINDING_CODES = {4000: "internal", 2004: "store"}
HUGE = 100_000

INJECTIONS: tuple[tuple[str, str], ...] = (
    ("cypher-quote", "' OR 1=1 WITH n MATCH (m) DETACH DELETE m //"),
    ("cypher-dquote", '" }) MATCH (n) DETACH DELETE n //'),
    ("cypher-backtick", "`) MATCH (n) DETACH DELETE n //`"),
    ("cypher-param", "$project_id"),
    ("cypher-comment", "x */ MATCH (n) RETURN n /*"),
    ("cypher-newline", "a\nMATCH (n) DETACH DELETE n"),
    ("cypher-label", "Person:Admin`:`x"),
    ("nul", "\x00"),
    ("nul-inside", "ab\x00cd"),
    ("control", "\x01\x1b[31mred\x7f\x9f"),
    ("huge", "x" * HUGE),
    ("huge-words", "word " * (HUGE // 5)),
    ("unicode", "Zürich 東京 🧠 ﷽ \u202eevil\u202c e\u0301 \U0001f468\u200d\U0001f469"),
    ("invisible", "\u200b\u200d\ufeff\u00ad"),
    ("empty", ""),
    ("blank", " \t\n "),
    ("mustache-nested", "{{#a}}" * 1000 + "x" + "{{/a}}" * 1000),
    ("mustache", "{{name}} {{{raw}}} {{> partial}} {{=<% %>=}} {{& amp}}"),
    ("json", '{"$ne": null, "__proto__": {}}'),
    ("path", "../../../etc/passwd"),
    ("number-like", "1e309"),
    ("backslashes", "\\' \\\" \\\\ \\u0000"),
    ("iso-edge", "9999-12-31T23:59:59.999999Z"),
)
INVALID_NUMBERS = (2**63, -(2**63) - 1, 10**30, -1, 0, 1e308, -1e308)

WORDS = (
    "alpha beta gamma delta Ada Lovelace Grace Hopper Paris Berlin compiler graph memory project "
    "deployment incident outage cause effect works_on lives_in knows Person Company City Service "
    "release Monday yesterday fixed broke because database cache latency Zürich café naïve"
).split()
ID_KEYS = re.compile(r"(^|_)(id|ids|name|names|entity|source|target|subject|object|cause|effect|node)s?$")
TIME_KEYS = re.compile(r"(time|date|_at|_from|_to|since|until|start|end)$")


@dataclass(frozen=True)
class Call:
    tool: str
    mode: str
    args: dict[str, Any]
    detail: str = ""  # what was mutated or injected, e.g. "injection nul at nodes[0].name"
    label: str = ""  # the injection or mutation kind


@dataclass(frozen=True)
class Finding:
    kind: str  # internal, store, schema, protocol, hang, crash
    call: Call
    message: str
    code: int | None = None

    def describe(self) -> str:
        args = json.dumps(self.call.args, ensure_ascii=True)
        if len(args) > 400:
            args = args[:400] + f"... ({len(args)} chars)"
        return (
            f"{self.kind} in {self.call.tool} ({self.call.mode}{', ' + self.call.detail if self.call.detail else ''}): "
            f"{self.message[:300]}\n    args: {args}"
        )


@dataclass
class Report:
    seed: int
    calls: int = 0
    seconds: float = 0.0
    by_mode: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)  # "<mode> ok", "<mode> 4002", ...
    per_tool: dict[str, Counter[str]] = field(default_factory=dict)
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)  # per mode
    findings: list[Finding] = field(default_factory=list)
    # Schema-invalid inputs answered as a success: the server is laxer than its published schema.
    accepted_invalid: Counter[str] = field(default_factory=Counter)  # "tool: detail"
    stopped: str = ""  # why the run stopped early, if it did

    @staticmethod
    def merged(reports: list[Report]) -> Report:
        """One report of runs made at once (by several clients of one server)."""
        total = Report(reports[0].seed)
        for report in reports:
            total.calls += report.calls
            total.seconds = max(total.seconds, report.seconds)
            total.by_mode.update(report.by_mode)
            total.outcomes.update(report.outcomes)
            for tool, counts in report.per_tool.items():
                total.per_tool.setdefault(tool, Counter()).update(counts)
            for mode, values in report.latencies_ms.items():
                total.latencies_ms.setdefault(mode, []).extend(values)
            total.findings.extend(report.findings)
            total.accepted_invalid.update(report.accepted_invalid)
            total.stopped = total.stopped or report.stopped
        return total

    def record(self, call: Call, outcome: str, ms: float) -> None:
        self.calls += 1
        self.by_mode[call.mode] += 1
        self.outcomes[f"{call.mode} {outcome}"] += 1
        self.per_tool.setdefault(call.tool, Counter())[call.mode] += 1
        self.per_tool[call.tool][f"{call.mode} {outcome}"] += 1
        self.latencies_ms.setdefault(call.mode, []).append(ms)


# --- values from a schema -------------------------------------------------------------------


class Values:
    """Schema-valid values, and ids and names the server has returned (to reach real data)."""

    def __init__(self, rng: random.Random, projects: tuple[str, ...]) -> None:
        self.rng = rng
        self.projects = projects
        self.seen: deque[str] = deque(maxlen=300)

    def harvest(self, structured: Any) -> None:
        for key, value in _leaves(structured):
            if isinstance(value, str) and 0 < len(value) <= 200 and ID_KEYS.search(key or ""):
                self.seen.append(value)

    def of(self, schema: dict[str, Any], root: dict[str, Any], key: str = "", depth: int = 0) -> Any:
        schema = resolve(schema, root)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        for union in ("anyOf", "oneOf"):
            if union in schema:
                branches = [resolve(b, root) for b in schema[union]]
                # Mostly a value, sometimes null where null is allowed.
                typed = [b for b in branches if b.get("type") != "null"] or branches
                branch = self.rng.choice(branches if self.rng.random() < 0.2 else typed)
                return self.of(branch, root, key, depth)
        kind = schema.get("type")
        if isinstance(kind, list):  # as for anyOf: mostly a value, sometimes null
            typed = [k for k in kind if k != "null"] or kind
            kind = self.rng.choice(kind if self.rng.random() < 0.2 else typed)
        if kind is None:
            kind = "object" if "properties" in schema else self.rng.choice(["string", "integer", "boolean"])
        make: Callable[..., Any] = getattr(self, f"_{kind}")
        return make(schema, root, key, depth)

    def _null(self, *_: Any) -> None:
        return None

    def _boolean(self, *_: Any) -> bool:
        return self.rng.random() < 0.5

    def _integer(self, schema: dict[str, Any], *_: Any) -> int:
        low, high = _bounds(schema, integer=True)
        picks = [low, high, low + 1, (low + high) // 2, self.rng.randint(low, high)]
        return int(min(max(self.rng.choice(picks), low), high))

    def _number(self, schema: dict[str, Any], *_: Any) -> float:
        low, high = _bounds(schema, integer=False)
        return self.rng.choice([low, high, self.rng.uniform(low, high), round(self.rng.uniform(low, high), 2)])

    def _string(self, schema: dict[str, Any], root: dict[str, Any], key: str, depth: int) -> str:
        low, high = schema.get("minLength", 0), schema.get("maxLength", 10**9)
        pattern = schema.get("pattern")
        for _ in range(12):
            text = self._text(key)
            if len(text) < low:
                text = (text + " " + "x" * low)[: max(low, len(text))]
            text = text[:high] if len(text) > high else text
            if len(text) >= low and (pattern is None or re.search(pattern, text)):
                return text
        return "a" * max(low, 1) if high >= max(low, 1) else ""

    def _text(self, key: str) -> str:
        roll = self.rng.random()
        if key == "project_id":
            return self.rng.choice(self.projects) if roll < 0.9 else f"p{self.rng.randrange(10**6)}"
        if ID_KEYS.search(key) and self.seen and roll < 0.7:
            return self.rng.choice(self.seen)
        if TIME_KEYS.search(key) and roll < 0.7:
            day = self.rng.randint(1, 28)
            return self.rng.choice([f"2024-03-{day:02d}", f"2025-01-{day:02d}T10:00:00Z", "yesterday", "now"])
        if roll < 0.1:
            return self.rng.choice(WORDS).upper() + "_" + self.rng.choice(WORDS).upper()
        if roll < 0.2:
            return "".join(self.rng.choice(string.ascii_lowercase + "_") for _ in range(self.rng.randint(1, 12)))
        if roll < 0.25:
            return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(50, 300)))
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(1, 8)))

    def _array(self, schema: dict[str, Any], root: dict[str, Any], key: str, depth: int) -> list[Any]:
        low = schema.get("minItems", 0)
        high = min(schema.get("maxItems", 6), low + 6)
        count = self.rng.randint(low, max(low, high if depth < 3 else low))
        items = schema.get("items", {"type": "string"})
        singular = key[:-1] if key.endswith("s") else key
        return [self.of(items, root, singular, depth + 1) for _ in range(count)]

    def _object(self, schema: dict[str, Any], root: dict[str, Any], key: str, depth: int) -> dict[str, Any]:
        properties: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", []))
        value = {}
        for name, sub in properties.items():
            if name in required or self.rng.random() < 0.5:
                value[name] = self.of(sub, root, name, depth + 1)
        extra = schema.get("additionalProperties", not properties)
        if extra is not False and not properties and depth < 4:
            sub = extra if isinstance(extra, dict) else {"type": self.rng.choice(["string", "integer", "boolean"])}
            for _ in range(self.rng.randint(0, 3)):
                value[self._text("")[:30] or "k"] = self.of(sub, root, "", depth + 1)
        return value


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/"), ref
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _bounds(schema: dict[str, Any], *, integer: bool) -> tuple[Any, Any]:
    low = schema.get("minimum", schema.get("exclusiveMinimum", -(10**3) if not integer else -5))
    high = schema.get("maximum", schema.get("exclusiveMaximum", 10**3 if not integer else 50))
    if "exclusiveMinimum" in schema:
        low = low + 1 if integer else low + 1e-6
    if "exclusiveMaximum" in schema:
        high = high - 1 if integer else high - 1e-6
    if "minimum" in schema and "maximum" not in schema and "exclusiveMaximum" not in schema:
        high = low + (50 if integer else 100)
    return low, high


def _types(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type")
    return kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []


def _leaves(value: Any, key: str | None = None) -> Iterator[tuple[str | None, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, key)
    else:
        yield key, value


# --- places in an input -----------------------------------------------------------------------

Path = tuple[str | int, ...]


def string_places(value: Any, path: Path = ()) -> Iterator[Path]:
    """Paths of every string in `value`, and of every key of a free-form object."""
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from string_places(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from string_places(v, (*path, i))


def put(value: Any, path: Path, new: Any) -> Any:
    value = copy.deepcopy(value)
    target = value
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = new
    return value


def show(path: Path) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


# --- one tool's calls -------------------------------------------------------------------------


@dataclass
class ToolUnderTest:
    name: str
    input_schema: dict[str, Any]
    output_validator: jsonschema.protocols.Validator | None
    # The whole output schema from the tool's page (`polyg://tools/{name}`), when the server has
    # one: the listing's is lean (the result's keys), this one is the contract.
    full_output_validator: jsonschema.protocols.Validator | None = None

    @cached_property
    def input_validator(self) -> jsonschema.protocols.Validator:
        return jsonschema.Draft202012Validator(self.input_schema)


class Generator:
    def __init__(self, seed: int, projects: tuple[str, ...]) -> None:
        self.schedule = random.Random(seed)
        self.values = Values(random.Random(seed + 1), projects)
        # Each tool's first calls take every mode once (in a drawn order), the rest are drawn by
        # weight: every tool meets every mode in any run of len(MODES) rounds or more.
        self._first_modes: dict[str, list[str]] = {}

    def _mode(self, tool: str) -> str:
        if tool not in self._first_modes:
            self._first_modes[tool] = self.schedule.sample(MODES, len(MODES))
        first = self._first_modes[tool]
        return first.pop() if first else self.schedule.choices(MODES, MODE_WEIGHTS)[0]

    def next_call(self, tool: ToolUnderTest) -> Call:
        mode = self._mode(tool.name)
        mutation = self.schedule.random()
        valid = self.values.of(tool.input_schema, tool.input_schema)
        if mode == "valid":
            return Call(tool.name, mode, valid)
        if mode == "injection":
            return self._inject(tool, valid, mutation)
        # A mutation can happen to stay valid (null where null is allowed): try another, and
        # fall back on an unknown field, which every tool refuses (additionalProperties false).
        for _ in range(5):
            broken = self._break(tool, valid)
            if not tool.input_validator.is_valid(broken.args):
                return broken
        return Call(tool.name, "invalid", {**valid, "no_such_field": 1}, "unknown field", "unknown-field")

    def _inject(self, tool: ToolUnderTest, valid: dict[str, Any], roll: float) -> Call:
        label, text = INJECTIONS[int(roll * len(INJECTIONS))]
        places = [p for p in string_places(valid) if p != ("project_id",)]
        if not places or self.schedule.random() < 0.1:
            places = [("project_id",)]
        where = places[int(self.schedule.random() * len(places))]
        return Call(tool.name, "injection", put(valid, where, text), f"{label} at {show(where)}", label)

    def _break(self, tool: ToolUnderTest, valid: dict[str, Any]) -> Call:
        schema = tool.input_schema
        properties: dict[str, Any] = schema.get("properties", {})
        required = list(schema.get("required", []))
        choice = self.schedule.choice(["drop-required", "unknown-field", "wrong-type", "out-of-range", "not-object"])
        name = self.schedule.choice(sorted(properties)) if properties else "x"
        if choice == "drop-required" and required:
            dropped = self.schedule.choice(required)
            args = {k: v for k, v in valid.items() if k != dropped}
            return Call(tool.name, "invalid", args, f"without {dropped}", choice)
        if choice == "unknown-field" or not properties:
            return Call(tool.name, "invalid", {**valid, "no_such_field": 1}, "unknown field", "unknown-field")
        if choice == "not-object":
            return Call(tool.name, "invalid", {**valid, name: {"nested": ["x"]}}, f"{name} an object", choice)
        sub = resolve(properties[name], schema)
        if choice == "out-of-range":
            return Call(tool.name, "invalid", {**valid, name: self._out_of_range(sub)}, f"{name} out of range", choice)
        wrong = self.schedule.choice([7, "seven", 1.5, True, None, [], ["a", 1], {"a": 1}])
        if wrong is None and name not in required:
            # null for an optional parameter means "not given" to the server; the lean listing
            # writes some optional parameters (project_id) without their null.
            wrong = "seven"
        return Call(tool.name, "invalid", {**valid, name: wrong}, f"{name}={wrong!r}", choice)

    def _out_of_range(self, sub: dict[str, Any]) -> Any:
        kinds = {k for b in sub.get("anyOf", [sub]) for k in _types(b)}
        if "integer" in kinds or "number" in kinds:
            return self.schedule.choice(INVALID_NUMBERS)
        if "array" in kinds:
            return ["x"] * self.schedule.choice([0, 101, 1001])
        return self.schedule.choice(["", "x" * HUGE, "no\nnewline", "-starts-with-dash"])


# --- the run ------------------------------------------------------------------------------------


async def tools_under_test(client: Client) -> list[ToolUnderTest]:
    """Every listed tool, with its published input schema (what inputs are generated from) and
    output schemas to check results against."""
    listed = (await client.list_tools()).tools
    return [
        ToolUnderTest(
            t.name,
            dict(t.input_schema),
            jsonschema.Draft202012Validator(t.output_schema) if t.output_schema else None,
            await _full_output_validator(client, t.name),
        )
        for t in listed
    ]


async def _full_output_validator(client: Client, tool: str) -> jsonschema.protocols.Validator | None:
    try:
        page = await client.read_resource(f"polyg://tools/{tool}")
    except MCPError:  # a server without tool pages
        return None
    text = getattr(page.contents[0], "text", "")
    blocks = re.findall(r"## Output schema\n\n```json\n(.*?)\n```", text, re.DOTALL)
    return jsonschema.Draft202012Validator(json.loads(blocks[0])) if blocks else None


@dataclass(frozen=True)
class Outcome:
    label: str  # "ok", an error code, or a finding's kind: counted in the report
    finding: Finding | None = None
    structured: Any = None  # a success's structuredContent


async def run_one(client: Client, tool: ToolUnderTest, call: Call, timeout_s: float) -> Outcome:
    try:
        with anyio.fail_after(timeout_s):
            result = await client.call_tool(call.tool, call.args)
    except TimeoutError:
        return Outcome("hang", Finding("hang", call, f"no answer within {timeout_s:g} s"))
    except MCPError as exc:
        return Outcome("protocol", Finding("protocol", call, f"{exc.code}: {exc.message}", exc.code))
    except RuntimeError as exc:  # the client's own output-schema check
        return Outcome("schema", Finding("schema", call, str(exc)))
    meta = result.meta or {}
    if result.is_error:
        code = meta.get("polyg/errorCode")
        text = result.content[0].text if result.content and result.content[0].type == "text" else ""
        if result.structured_content is not None:
            return Outcome("schema", Finding("schema", call, "an error with structuredContent", code))
        if code in FINDING_CODES:
            return Outcome(str(code), Finding(FINDING_CODES[code], call, text, code))
        return Outcome(str(code))
    structured = result.structured_content
    for validator in (tool.output_validator, tool.full_output_validator):
        if validator is None:
            continue
        if structured is None:
            return Outcome("schema", Finding("schema", call, "a success without structuredContent"))
        errors = sorted(validator.iter_errors(structured), key=str)
        if errors:
            return Outcome("schema", Finding("schema", call, f"{errors[0].json_path}: {errors[0].message}"))
    return Outcome("ok", None, structured)


async def fuzz(
    client: Client,
    *,
    seed: int,
    rounds: int,
    projects: tuple[str, ...] = ("fuzz-a", "fuzz-b"),
    timeout_s: float = 20.0,
    seconds: float | None = None,
    progress: Callable[[Report], None] | None = None,
) -> Report:
    """`rounds` calls of every tool (in a seeded order and mode), or until `seconds` pass."""
    tools = await tools_under_test(client)
    generator = Generator(seed, projects)
    report = Report(seed)
    started = time.monotonic()
    hangs = 0
    for round_number in range(rounds):
        order = list(tools)
        generator.schedule.shuffle(order)
        for tool in order:
            call = generator.next_call(tool)
            began = time.perf_counter()
            try:
                outcome = await run_one(client, tool, call, timeout_s)
            except Exception as exc:  # the server went away, or the connection broke
                report.findings.append(Finding("crash", call, f"{type(exc).__name__}: {exc}"))
                report.stopped = f"crash at round {round_number}"
                report.seconds = time.monotonic() - started
                return report
            report.record(call, outcome.label, (time.perf_counter() - began) * 1000)
            if outcome.finding is not None:
                report.findings.append(outcome.finding)
                hangs += outcome.finding.kind == "hang"
            generator.values.harvest(outcome.structured)
            if call.mode == "invalid" and outcome.label == "ok":
                report.accepted_invalid[f"{call.tool}: {call.label} ({call.detail[:60]})"] += 1
            if hangs >= 3:
                report.stopped = "three calls hung"
                report.seconds = time.monotonic() - started
                return report
        if progress is not None:
            progress(report)
        if seconds is not None and time.monotonic() - started > seconds:
            report.stopped = f"time limit after {round_number + 1} rounds"
            break
    report.seconds = time.monotonic() - started
    return report
