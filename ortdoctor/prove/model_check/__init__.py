"""`check --model`: the user's own model, read from its protobuf and placed by onnxruntime in a child."""
