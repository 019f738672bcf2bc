"""Repository-level defaults only: the repository root is importable, so suites and tests reach `fixtures`."""
