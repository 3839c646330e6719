"""What every module of the `memory` toolset shares: the toolset itself (its tools register on
it as their modules are imported) and the parameters many of its tools take.

Times in arguments are ISO 8601 or English phrases read against `reference_time` (default: the
server's clock) in `timezone` (default: the reference's zone, else UTC); times in results are UTC.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from polyg.tools.registry import Toolset

memory = Toolset(
    "memory",
    instructions=(
        "memory: remember stores a memory and what it states (entities, events, facts, causal links); "
        "recall answers a question from all of it, citing its evidence. Direct tools: entities by name "
        "(add_entity, link_entities, get_entity), events and facts in time (add_event, add_fact, get_facts, "
        "query_timeline, list_invalidations, undo_invalidation), causes (add_causal_link, get_causal_chain, "
        "explain_why), concepts (add_concept, search_semantic); get_statistics, clear_graph, export_graph. "
        # Said once here rather than in every time parameter's description in tools/list.
        "Times are ISO 8601 or English phrases ('yesterday 14:30', 'last Tuesday'), read against "
        "reference_time (ISO; default: now) in timezone (IANA; default: the reference time's zone, else "
        "UTC); results are in UTC."
    ),
)

# limit and offset are described by their names and bounds (kept short: every tools/list carries them).
LIMIT = Field(default=50, ge=1, le=1000)
OFFSET = Field(default=0, ge=0)
# Described once, in the toolset's instructions (every time tool has them).
REFERENCE = Field(default=None)
TIMEZONE = Field(default=None)
Graph = Literal["semantic", "temporal", "causal", "entity", "all"]
Direction = Literal["upstream", "downstream", "both"]
