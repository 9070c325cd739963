"""Prove: child processes that import onnxruntime and run real sessions (the smoke session, the user's model)."""
