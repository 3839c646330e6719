"""GraphRAG (spec 004): relationship extraction, local subgraphs with salience."""
