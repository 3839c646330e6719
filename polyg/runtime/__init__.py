"""The running server: the core wired once from the configuration, started and closed."""
