"""Benchmarks of speed and resources: latency, throughput, memory, load and start times."""
