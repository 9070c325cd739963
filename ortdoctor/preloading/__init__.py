"""Preload: load the chosen libraries by absolute path and prove what got mapped; the hook installer."""
