"""The `memory` toolset (spec 003): a memory's `remember` and `recall` over four graphs, and each
graph's direct tools. Each tool parses its arguments, calls the core's memory graphs and shapes
the typed result into the spec's form. One module per group of tools, each registering them on
import: imported in the order the tools are listed."""

# isort: off
from polyg.tools.memory import entities, timeline, causal, semantic, management, recall

# isort: on
from polyg.tools.memory.shared import memory

__all__ = ["causal", "entities", "management", "memory", "recall", "semantic", "timeline"]
