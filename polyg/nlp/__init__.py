"""The English NLP pipeline (spaCy 3.8 and its small English model), one per process: sentence
boundaries, named entities, dependency parses and lemmas for what `remember` extracts."""
