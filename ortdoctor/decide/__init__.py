"""Decide: from the facts and the compatibility matrix, which library files to load and what the loader would do on its own."""
