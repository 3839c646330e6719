"""Recall (spec 003): classify a query's intent, query the graphs it needs concurrently, and
synthesise an answer from the evidence; rule-based by default, with an LLM when configured."""
