"""polyg's benchmarks (not part of the package): latency/, quality/, tools/, and their shared lib/."""
