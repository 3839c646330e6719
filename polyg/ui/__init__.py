"""The graph view: a page at `/ui` of the HTTP app and the same view as an MCP App resource."""
