"""Traversal: neighbourhoods, best paths, subgraphs, and paths told in English."""
