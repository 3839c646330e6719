"""Code the benchmarks share, one module per job (see bench/README.md, "Shared code").

A script imports what it needs by module, after putting the repository on the path:

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench.lib, polyg, tests
    from bench.lib.stats import summarize

Nothing here asserts on timings: the benchmark machines are shared and noisy, so results are
medians and ratios read from one run, never pass/fail gates.
"""
