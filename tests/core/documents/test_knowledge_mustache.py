"""The Mustache renderer: the Mustache spec's rules (cases from its interpolation, sections,
inverted, comments, partials, delimiters and standalone-line suites) and mustache.js's printing
of values."""

from __future__ import annotations

from typing import Any

import pytest

from polyg.core.documents.mustache import MustacheError, js_string, parse, render_text

PARTIAL = "|\n{{{content}}}\n|\n"

CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("variable", "Hello, {{subject}}!", {"subject": "world"}, "Hello, world!"),
    ("escaped", "{{forbidden}}", {"forbidden": '& " < >'}, "&amp; &quot; &lt; &gt;"),
    ("triple mustache", "{{{forbidden}}}", {"forbidden": '& " < >'}, '& " < >'),
    ("ampersand", "{{&forbidden}}", {"forbidden": '& " < >'}, '& " < >'),
    ("missing is empty", "[{{missing}}]", {}, "[]"),
    (
        "standalone section lines",
        "| This Is\n{{#boolean}}\n|\n{{/boolean}}\n| A Line",
        {"boolean": True},
        "| This Is\n|\n| A Line",
    ),
    ("indented standalone", "  {{#boolean}}\n#{{/boolean}}\n/", {"boolean": True}, "#\n/"),
    ("standalone without newline", "#{{#boolean}}\n/\n  {{/boolean}}", {"boolean": True}, "#\n/\n"),
    (
        "not standalone",
        "| {{#boolean}} {{! Important Whitespace }}\n {{/boolean}} |\n",
        {"boolean": True},
        "|  \n  |\n",
    ),
    ("set delimiters", "{{=<% %>=}}(<%text%>)", {"text": "Hey!"}, "(Hey!)"),
    ("multiline comment", "Begin.\n{{!\nSomething's going on here...\n}}\nEnd.\n", {}, "Begin.\nEnd.\n"),
    ("standalone comment", "  {{! I'm Still Standalone }}\n!", {}, "!"),
    ("standalone partial indentation", "\\\n {{>partial}}\n/\n", {"content": "<\n->"}, "\\\n |\n <\n->\n |\n/\n"),
    ("missing partial", "[{{>nothing}}]", {}, "[]"),
    ("list section", '"{{#list}}{{item}}{{/list}}"', {"list": [{"item": 1}, {"item": 2}, {"item": 3}]}, '"123"'),
    ("implicit iterator", '"{{#list}}({{.}}){{/list}}"', {"list": ["a", "b"]}, '"(a)(b)"'),
    ("inverted empty list", '"{{^list}}none{{/list}}"', {"list": []}, '"none"'),
    ("inverted false", '"{{^b}}no{{/b}}"', {"b": False}, '"no"'),
    ("dotted names", '"{{a.b.c}}"', {"a": {"b": {"c": "x"}}}, '"x"'),
    ("dotted context precedence", '"{{#a}}{{b.c}}{{/a}}"', {"a": {"b": {}}, "b": {"c": "ERROR"}}, '""'),
    ("context lookup goes up", "{{#a}}{{#b}}{{c}}{{/b}}{{/a}}", {"a": {"c": "up"}, "b": True}, "up"),
    # mustache.js prints values as JavaScript's String() does.
    (
        "values as JavaScript prints them",
        "{{x}} {{y}} {{z}} {{w}} {{v}}",
        {"x": True, "y": 1.0, "z": [1, None, "b"], "w": None, "v": 2.5},
        "true 1 1,,b  2.5",
    ),
    ("list value", "on {{projects}}", {"projects": ["Recordings", "Bebop"]}, "on Recordings,Bebop"),
    ("JavaScript falsy section values", "{{#e}}E{{/e}}{{#z}}Z{{/z}}{{^z}}not z{{/z}}", {"e": "", "z": 0}, "not z"),
    ("mustache.js escapes more", "{{x}}", {"x": "a'b/c=`"}, "a&#39;b&#x2F;c&#x3D;&#x60;"),
]


@pytest.mark.parametrize(("template", "data", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_renders_as_the_spec_says(template: str, data: dict[str, Any], expected: str) -> None:
    assert render_text(template, data, {"partial": PARTIAL}) == expected


def test_values_are_never_rendered_as_templates() -> None:
    data = {"x": "{{secret}}", "y": "{{#s}}{{/s}}", "secret": "S", "s": True}
    assert render_text("{{x}} {{{y}}}", data) == "{{secret}} {{#s}}{{/s}}"


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("{{#a}}x", "never closed"),
        ("{{/a}}", "without an opening tag"),
        ("{{#a}}{{/b}}", "is closed by"),
        ("{{x", "unclosed tag"),
        ("{{}}", "empty tag"),
        ("{{=<%>=}}", "delimiter"),
    ],
)
def test_templates_that_do_not_parse_are_refused(template: str, reason: str) -> None:
    with pytest.raises(MustacheError) as info:
        parse(template)
    assert reason in info.value.message and info.value.code == 4002


def test_js_string() -> None:
    assert [js_string(v) for v in (None, False, 3, 1e21, 1e-7, [[1, 2], 3], {"a": 1})] == [
        "",
        "false",
        "3",
        "1e+21",
        "1e-7",
        "1,2,3",
        "[object Object]",
    ]


def test_nesting_is_limited_on_parse_and_on_render() -> None:
    from polyg.core.documents.mustache import MAX_NESTING

    def nested(depth: int, inner: str = "{{x}}") -> str:
        return (
            "".join(f"{{{{#s{i}}}}}" for i in range(depth))
            + inner
            + "".join(f"{{{{/s{i}}}}}" for i in reversed(range(depth)))
        )

    # 1,000 nested sections parsed, then every render died of Python's recursion limit.
    with pytest.raises(MustacheError, match=f"deeper than {MAX_NESTING}"):
        parse(nested(1000))
    data = {f"s{i}": True for i in range(MAX_NESTING)} | {"x": "deep"}
    assert render_text(nested(MAX_NESTING), data) == "deep"
    # Partials each within the limit, together past it: refused when rendered, not a crash.
    partial = nested(60, "{{> p}}")
    with pytest.raises(MustacheError, match="nest deeper"):
        render_text(partial, data, {"p": partial})
