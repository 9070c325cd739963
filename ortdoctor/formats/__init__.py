"""Readers of binary file formats: standard library only, bounded reads, one error type each."""
