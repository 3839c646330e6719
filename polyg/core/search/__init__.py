"""Search: hybrid entity search and its presets, graph-aware search, exploration,
chunk retrieval, centrality, and name resolution (which finds candidates by search)."""
