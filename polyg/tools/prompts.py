"""MCP prompts: how a toolset declares them, and spec 002's usage examples (the `kg` toolset's,
with the project as an argument)."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class PromptSpec:
    name: str
    description: str
    template: str  # str.format with {project_id} and the prompt's own arguments
    arguments: tuple[tuple[str, str, str], ...] = ()  # (name, description, default)

    def for_project(self, project: str) -> PromptSpec:
        """This prompt with `project_id` defaulting to `project` (the server's), not the spec's
        example project."""
        arguments = tuple((n, d, project if n == "project_id" else default) for n, d, default in self.arguments)
        return replace(self, arguments=arguments)


# The spec's example project; a server serves its prompts with its own (`PromptSpec.for_project`).
PROJECT_ARG = ("project_id", "Project to work in.", "proj_123")

PROMPTS: tuple[PromptSpec, ...] = (
    PromptSpec(
        "create_file_entity",
        "Create a 'file' entity (expected call: create_entity).",
        "Create a 'file' entity named '{name}' under project '{project_id}'.",
        (PROJECT_ARG, ("name", "File path to record.", "src/utils.ts")),
    ),
    PromptSpec(
        "link_entities",
        "Create a relationship between two entities (expected call: create_relationship).",
        "In project '{project_id}', create an '{type}' relationship from entity '{source_id}' to entity '{target_id}'.",
        (
            PROJECT_ARG,
            ("type", "Relationship type.", "imports"),
            ("source_id", "Source entity id.", "file_abc"),
            ("target_id", "Target entity id.", "func_xyz"),
        ),
    ),
    PromptSpec(
        "add_details",
        "Add an observation to an entity (expected call: add_observation).",
        "For entity '{entity_id}' in project '{project_id}', add the observation: '{observation}'.",
        (
            PROJECT_ARG,
            ("entity_id", "Entity id.", "func_xyz"),
            ("observation", "The fact to record.", "Handles date formatting using moment.js"),
        ),
    ),
    PromptSpec(
        "query_contained",
        "Ask what an entity contains (expected call: get_related_entities, outgoing 'contains').",
        "In project '{project_id}', what functions does entity '{entity_id}' contain?",
        (PROJECT_ARG, ("entity_id", "Entity id.", "file_abc")),
    ),
    PromptSpec(
        "list_by_type",
        "List entities of one type (expected call: list_entities).",
        "List all '{type}' entities in project '{project_id}'.",
        (PROJECT_ARG, ("type", "Entity type.", "class")),
    ),
)


def render(prompt: PromptSpec, arguments: dict[str, str] | None) -> str:
    values = {name: default for name, _, default in prompt.arguments}
    values.update({k: v for k, v in (arguments or {}).items() if k in values})
    return prompt.template.format(**values)
