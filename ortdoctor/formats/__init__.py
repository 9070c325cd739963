"""Readers of the file formats ortdoctor inspects (ELF, PE, CUDA fatbin headers, dist-info, ld.so.cache, /proc maps, ORT logs, .npy headers; regular files only), standard library only."""
