"""The vocabulary every stage shares: the facts (plain data), the finding catalog, exit codes."""
