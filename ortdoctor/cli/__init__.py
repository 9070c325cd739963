"""The click layer: parse options, call the library, print what the renderers return, pick the exit code."""
