"""Memory (spec 002 and memory-compat): remember's write path and extraction, the entity,
temporal and causal graphs, concepts, views, and memory-compat's named entities."""
