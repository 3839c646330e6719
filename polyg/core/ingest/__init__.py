"""Ingestion (spec 001): parsing and chunking documents into the graph."""
