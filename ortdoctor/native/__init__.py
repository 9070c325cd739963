"""Native code: the one gate every library ortdoctor maps into a process goes through (standard library only)."""
