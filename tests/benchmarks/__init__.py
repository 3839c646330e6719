"""Tests of the benchmarks' own code (bench/lib): what a benchmark measures must be what the tools do."""
