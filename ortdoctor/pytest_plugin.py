"""pytest plugin (registered through the ``pytest11`` entry point). Kept import-light: pytest loads it
in every test session of an environment where ortdoctor is installed."""

from __future__ import annotations
