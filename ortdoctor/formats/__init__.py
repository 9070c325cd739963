"""Readers of the file formats ortdoctor inspects (ELF, PE, dist-info, ld.so.cache, /proc maps, ORT logs), standard library only."""
