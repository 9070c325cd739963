"""Report: the report model, built once, and its renderers (text, JSON, markdown, short), which return strings."""
