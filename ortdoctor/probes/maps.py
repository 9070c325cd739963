"""Shared objects mapped into a process, read from ``/proc/<pid>/maps`` (Linux only).

What is mapped is what the loader will reuse: a second ``dlopen`` of the same soname returns the
copy already in memory, whatever the search path says. Each object is reported once, by realpath,
with the device and inode that identify the file even when two paths name it.

The parser is :func:`ortdoctor.loader.mapped_objects` (one copy: the preloader and the hook need it
without importing the probes); this module is the probes' name for it.
"""

from __future__ import annotations

from ortdoctor.loader import MappedObject, mapped_objects, mapped_paths

__all__ = ["MappedObject", "mapped_objects", "mapped_paths"]
