"""Template variables are bounded (issue 26) through the real MCP client: a query the database
could not stop is refused on save with its reason, and one it can stop ends at the render
limit with a 4xxx error, the server answering on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_helpers import KG, kg_session

pytestmark = pytest.mark.anyio

FIFTY = "[" + ", ".join(str(i) for i in range(50)) + "]"


@pytest.fixture(scope="module")
async def kn(servers_root: Path) -> AsyncIterator[KG]:
    async with kg_session("stdio", servers_root / "knowledge-bounds", "--toolsets", "knowledge") as client:
        yield client


def template(tid: str, variables: dict[str, str]) -> dict[str, Any]:
    return {"id": tid, "name": tid, "description": "", "structure": "{{name}}", "variables": variables}


async def test_unbounded_variables_are_refused_on_save(kn: KG, project: str) -> None:
    bad = {
        "range": ("UNWIND range(1, 100000000) AS x RETURN count(x) AS c", "ranges hold more than"),
        "computed range": ("RETURN size(range(1, toInteger(n.x) * 100000000)) AS c", "not an integer literal"),
        "reduce": ("RETURN reduce(s = 0, x IN range(1, 100) | s + x) AS c", "reduce() is not allowed"),
        "cartesian ranges": ("UNWIND range(1, 1000) AS a UNWIND range(1, 1000) AS b RETURN count(*) AS c", "ranges"),
    }
    out = await kn.ok(
        "manage_templates",
        {
            "project_id": project,
            "operation": "create",
            "templates": [template(name.replace(" ", "-"), {"v": query}) for name, (query, _) in bad.items()],
        },
    )
    for result, (name, (_, reason)) in zip(out["results"], bad.items(), strict=True):
        assert result["status"] == "error", name
        assert reason in result["message"], (name, result["message"])
    assert (await kn.ok("manage_templates", {"project_id": project, "operation": "list"}))["templates"] == []


async def test_a_variable_past_the_time_limit_is_a_4008_error(kn: KG, project: str) -> None:
    made = await kn.ok(
        "manage_nodes", {"project_id": project, "operation": "create", "nodes": [{"name": "Deep", "summary": "x"}]}
    )
    node_id = made["results"][0]["node_id"]
    deep = (
        f"WITH {FIFTY} AS xs UNWIND xs AS a UNWIND xs AS b UNWIND xs AS c UNWIND xs AS d UNWIND xs AS e "
        "RETURN count([a, b, c, d, e]) AS rows"
    )
    out = await kn.ok(
        "manage_templates",
        {"project_id": project, "operation": "create", "templates": [template("deep", {"v": deep})]},
    )
    assert out["results"][0]["status"] == "success", out
    failed = await kn.fails(
        "generate_documents",
        {"project_id": project, "node_identifiers": [node_id], "template_override": "deep"},
        code=4008,
    )
    assert "limit of 1000 ms" in failed.message
    doc = await kn.ok("generate_documents", {"project_id": project, "node_identifiers": [node_id]})
    assert doc["documents"][0]["content"] == "# Deep\n\nx\n"  # the server answers on


async def test_a_structure_nested_too_deep_is_refused_on_save(kn: KG, project: str) -> None:
    deep = "".join(f"{{{{#s{i}}}}}" for i in range(1000)) + "".join(f"{{{{/s{i}}}}}" for i in reversed(range(1000)))
    out = await kn.ok(
        "manage_templates",
        {
            "project_id": project,
            "operation": "create",
            "templates": [{"id": "deep", "name": "deep", "description": "", "structure": deep}],
        },
    )
    assert out["results"][0]["status"] == "error"
    assert "nest deeper than 100" in out["results"][0]["message"]


async def test_template_ids_are_unique(kn: KG, project: str) -> None:
    async def create(*items: dict[str, Any]) -> list[dict[str, Any]]:
        out = await kn.ok("manage_templates", {"project_id": project, "operation": "create", "templates": list(items)})
        results: list[dict[str, Any]] = out["results"]
        return results

    def statuses(results: list[dict[str, Any]]) -> list[str]:
        return [r["status"] for r in results]

    # A duplicate within one batch, then an id that exists.
    assert statuses(await create(template("t1", {}), template("t1", {}))) == ["success", "error"]
    [again] = await create(template("t1", {}))
    assert again["status"] == "error" and "exists already" in again["message"]
    # Ten creates of one id at once: one template (there were ten).
    together = await asyncio.gather(*(create(template("t2", {})) for _ in range(10)))
    assert sorted(r["status"] for [r] in together) == ["error"] * 9 + ["success"]
    # An entity's id.
    made = await kn.ok(
        "manage_nodes", {"project_id": project, "operation": "create", "nodes": [{"name": "E", "summary": "x"}]}
    )
    entity_id = made["results"][0]["node_id"]
    [clash] = await create(template(entity_id, {}))
    assert clash["status"] == "error" and "entity's id" in clash["message"]
    listed = (await kn.ok("manage_templates", {"project_id": project, "operation": "list"}))["templates"]
    assert sorted(t["id"] for t in listed) == ["t1", "t2"]


async def test_the_variables_of_a_template_share_one_time_budget(kn: KG, project: str) -> None:
    made = await kn.ok(
        "manage_nodes", {"project_id": project, "operation": "create", "nodes": [{"name": "Many", "summary": "x"}]}
    )
    node_id = made["results"][0]["node_id"]
    deep = (
        f"WITH {FIFTY} AS xs UNWIND xs AS a UNWIND xs AS b UNWIND xs AS c UNWIND xs AS d UNWIND xs AS e "
        "RETURN count([a, b, c, d, e]) AS rows"
    )
    # Four variables: 500 ms each (before, 1 s each: 32 slow variables held the database 32 s).
    variables = {"a": "RETURN n.name AS v", "b": "RETURN n.summary AS v", "c": "RETURN 1 AS v", "deep": deep}
    out = await kn.ok(
        "manage_templates",
        {"project_id": project, "operation": "create", "templates": [template("four", variables)]},
    )
    assert out["results"][0]["status"] == "success", out
    failed = await kn.fails(
        "generate_documents",
        {"project_id": project, "node_identifiers": [node_id], "template_override": "four"},
        code=4008,
    )
    assert "limit of 500 ms" in failed.message and "share 2000 ms" in failed.message
