"""The toolset registry: one name, one tool; shared tools accept each spec's form; prompts and
instructions follow the enabled toolsets; the catalog is the one list of toolset names."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from polyg import catalog
from polyg.catalog import ToolsetInfo
from polyg.config import ALL_TOOLSETS, DEFAULT_TOOLSETS, load_settings
from polyg.embed import create_embedder
from polyg.errors import ConfigError, NotFound
from polyg.runtime.app import Polyg, Services
from polyg.server import Dispatcher
from polyg.tools import toolsets
from polyg.tools.kg import shape_entity
from polyg.tools.prompts import PromptSpec
from polyg.tools.registry import Form, Params, ToolNameConflict, Toolset, shared_tool
from tests.mcp_helpers import kg_session

pytestmark = pytest.mark.anyio


# --- a test pair of toolsets sharing `get_entity`, as specs 002 and 003 do --------------------


class ById(Params):
    entity_id: str


class ByName(Params):
    name: str


async def get_by_id(s: Services, p: ById) -> dict[str, Any]:
    return {"entity": shape_entity(await s.entities.get(s.project(p.project_id), p.entity_id))}


async def get_by_name(s: Services, p: ByName) -> dict[str, Any]:
    project = s.project(p.project_id)
    found = await s.named.ids_by_name(project, [p.name])
    if p.name not in found:
        raise NotFound(f"Entity {p.name!r} not found.")
    return {"entity": shape_entity(await s.entities.get(project, found[p.name]))}


def sharing_toolsets() -> dict[str, Toolset]:
    get_entity = shared_tool(
        "get_entity",
        [Form(ById, get_by_id), Form(ByName, get_by_name)],
        description="An entity by id (spec 002) or by name (spec 003).",
        read_only=True,
    )
    ids, names = Toolset("ids"), Toolset("names")
    ids.share(get_entity)
    names.share(get_entity)

    @names.tool(Params)
    async def only_in_names(s: Services, p: Params) -> str:
        """A tool of one toolset."""
        return "names"

    known = {n: ToolsetInfo(n, "test", built=True) for n in ("ids", "names")}
    return toolsets.collect((ids, names), known)


@pytest.fixture
async def services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Services]:
    for name in list(os.environ):
        if name.startswith(("POLYG_", "FALKORDB_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    core = Polyg(
        load_settings(None, data_dir=tmp_path / "data", log_dir=tmp_path / "logs"), embedder=create_embedder("hashing")
    )
    try:
        yield await core.ready()
    finally:
        await core.close()


def structured(result: Any) -> dict[str, Any]:
    value: dict[str, Any] = result.structured_content
    assert json.loads(result.content[0].text) == value
    return value


async def test_a_shared_tool_is_listed_once_and_answers_both_forms(services: Services) -> None:
    test_sets = sharing_toolsets()
    tools = toolsets.enabled(["ids", "names"], test_sets)
    assert sorted(t.name for t in tools) == ["get_entity", "only_in_names"]
    schema = next(t for t in tools if t.name == "get_entity").input_schema
    assert {"entity_id", "name", "project_id"} <= set(schema["properties"]) and not schema.get("required")

    made = await services.entities.create("shared", name="Ada", type_="person", observations=["wrote notes"])
    dispatcher = Dispatcher(_core_of(services), tools)
    by_id = structured(await dispatcher.call("get_entity", {"project_id": "shared", "entity_id": made.id}))
    by_name = structured(await dispatcher.call("get_entity", {"project_id": "shared", "name": "Ada"}))
    assert by_id == by_name == {"entity": shape_entity(made)}

    for arguments in ({"project_id": "shared"}, {"project_id": "shared", "entity_id": made.id, "name": "Ada"}):
        result = await dispatcher.call("get_entity", arguments)
        assert result.is_error
        assert result.content[0].text == "Error: Invalid arguments for get_entity: give entity_id, or name."
    wrong_type = await dispatcher.call("get_entity", {"name": 7})
    assert wrong_type.is_error and "name" in wrong_type.content[0].text
    missing = await dispatcher.call("get_entity", {"project_id": "shared", "name": "Grace"})
    assert missing.is_error and missing.content[0].text == "Error: Entity 'Grace' not found."
    assert (missing.meta or {}).get("polyg/errorCode") == 4004


def _core_of(services: Services) -> Polyg:
    """A core whose `ready()` gives these services (the dispatcher asks it for them)."""
    core = Polyg(services.settings)
    core._services = services
    return core


# --- one name, one thing -------------------------------------------------------------------------


def test_a_toolset_declaring_a_name_twice_fails_at_once() -> None:
    toolset = Toolset("t")

    @toolset.tool(Params)
    async def twice(s: Services, p: Params) -> str:
        return "first"

    with pytest.raises(ToolNameConflict, match="twice"):

        @toolset.tool(Params)  # type: ignore[no-redef]
        async def twice(s: Services, p: Params) -> str:
            return "second"


def test_two_toolsets_claiming_one_name_for_different_tools_fail() -> None:
    first, second = Toolset("first"), Toolset("second")
    for toolset in (first, second):

        @toolset.tool(Params)
        async def clash(s: Services, p: Params) -> str:
            return "either"

    known = {n: ToolsetInfo(n, "test", built=True) for n in ("first", "second")}
    with pytest.raises(ToolNameConflict, match="'clash' is claimed by toolsets 'first' and 'second'"):
        toolsets.collect((first, second), known)


def test_prompt_names_are_unique_across_toolsets() -> None:
    first = Toolset("first", prompts=(PromptSpec("same", "one", "text"),))
    second = Toolset("second", prompts=(PromptSpec("same", "other", "text"),))
    known = {n: ToolsetInfo(n, "test", built=True) for n in ("first", "second")}
    with pytest.raises(ToolNameConflict, match="'same'"):
        toolsets.collect((first, second), known)


def test_the_catalog_and_the_built_toolsets_must_agree() -> None:
    lone = Toolset("lone")
    with pytest.raises(ToolNameConflict, match="not in the catalog"):
        toolsets.collect((lone,), {})
    # A built toolset whose module does not define it (under its name), or that names no module.
    for ghost in (ToolsetInfo("ghost", "t", True, modules=("polyg.tools.kg",)), ToolsetInfo("ghost", "t", True)):
        with pytest.raises(ToolNameConflict, match="no such toolset"):
            toolsets.load(["ghost"], {"ghost": ghost})


def test_every_toolset_loaded_together_claims_each_name_for_one_thing() -> None:
    # A server loads only the toolsets it serves, so a clash between two toolsets never served
    # together would go unseen there: this loads them all and checks them together.
    every = toolsets.load_all()
    assert tuple(every) == catalog.BUILT
    assert {t.name for t in toolsets.enabled(list(every))} == {t.name for ts in every.values() for t in ts.tools}
    assert len({p.name for ts in every.values() for p in ts.prompts}) == len(toolsets.prompts(list(every)))


def test_shared_tool_forms_must_be_told_apart() -> None:
    async def handler(s: Services, p: Any) -> str:
        return ""

    with pytest.raises(ToolNameConflict, match="told apart"):
        shared_tool("x", [Form(ById, handler), Form(ById, handler)], description="")

    class ByNumberedName(Params):
        name: int
        page: int

    with pytest.raises(ToolNameConflict, match="disagree on the type of 'name'"):
        shared_tool("x", [Form(ByName, handler), Form(ByNumberedName, handler)], description="")


# --- the catalog: the one list of toolset names --------------------------------------------------


def test_all_is_every_built_toolset() -> None:
    assert ALL_TOOLSETS == catalog.BUILT == tuple(toolsets.load_all())
    assert load_settings(toolsets="all").toolsets == list(toolsets.load_all())
    assert set(catalog.KNOWN) >= {"kg", "memory-compat", "knowledge", "memory", "graphrag", "retrieval"}


PLANNED = [info for info in catalog.CATALOG if not info.built]
needs_planned = pytest.mark.skipif(not PLANNED, reason="every toolset the catalog knows is built")


@needs_planned
def test_a_planned_toolset_is_accepted_logged_and_not_served(caplog: pytest.LogCaptureFixture) -> None:
    planned = PLANNED[0]
    assert load_settings(toolsets=f"kg,{planned.name}").toolsets == ["kg", planned.name]
    with caplog.at_level(logging.WARNING, logger="polyg.tools.toolsets"):
        tools = toolsets.enabled(["kg", planned.name])
    assert {t.name for t in tools} == {t.name for t in toolsets.enabled(["kg"])}
    (record,) = caplog.records
    assert record.getMessage() == "toolset not available yet"
    assert (record.toolset, record.spec, record.serving) == (planned.name, planned.spec, ["kg"])  # type: ignore[attr-defined]


@needs_planned
def test_naming_only_planned_toolsets_is_a_configuration_error() -> None:
    names = [info.name for info in PLANNED]
    with pytest.raises(ConfigError, match=rf"toolsets {re.escape(str(names))} are not available yet"):
        load_settings(toolsets=",".join(names))


async def test_by_default_a_client_sees_about_30_tools_recall_and_remember_among_them(tmp_path: Path) -> None:
    async with kg_session("stdio", tmp_path / "default") as server:
        names = {tool.name for tool in (await server.client.list_tools()).tools}
    assert len(names) <= 30
    assert {"recall", "remember", "create_entity", "get_entity"} <= names
    assert names == {t.name for t in toolsets.enabled(list(DEFAULT_TOOLSETS))}
    assert len(toolsets.enabled(list(ALL_TOOLSETS))) > len(names)


# --- prompts and instructions follow the enabled toolsets ----------------------------------------


async def test_prompts_and_instructions_are_served_only_for_enabled_toolsets(tmp_path: Path) -> None:
    async with kg_session("stdio", tmp_path / "mc", "--toolsets", "memory-compat") as mc:
        assert (await mc.client.list_prompts()).prompts == []
        instructions = mc.client.instructions or ""
        assert "memory-compat:" in instructions and "kg:" not in instructions
    async with kg_session("stdio", tmp_path / "kg", "--toolsets", "kg") as kg:
        assert len((await kg.client.list_prompts()).prompts) == 5
        instructions = kg.client.instructions or ""
        assert "kg:" in instructions and "memory-compat:" not in instructions
