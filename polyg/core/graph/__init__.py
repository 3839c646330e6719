"""The graph every capability writes and reads: the context each service needs (store,
embedder, schema guard, vectorizer), nodes, edges, relationship types, projects, indexes and
vectors."""
