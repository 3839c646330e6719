"""Benchmarks of answer quality: extraction, intent, answers, LoCoMo retrieval and recall."""
