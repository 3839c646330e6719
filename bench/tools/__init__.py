"""Runnable helpers that measure no speed or quality: the long fuzz run, UI screenshots, the Blue Note loader."""
