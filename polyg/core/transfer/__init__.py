"""Import and export of a project."""
