"""polyg: graph memory and GraphRAG retrieval for AI agents, served over MCP, on FalkorDB."""

__version__ = "0.1.0"
