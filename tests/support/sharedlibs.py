"""Compile small, real shared libraries for tests: right sonames, real DT_NEEDED chains, real symbols."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

# soname -> C source with the library's real version function and encoding, so a preload can prove
# what it loaded; the CUDA 13 sonames in the order the CUDA provider loads them
VERSION_SOURCES = {
    "libcudart.so.13": "int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }\n",
    "libcublasLt.so.13": "#include <stddef.h>\nsize_t cublasLtGetVersion(void) { return 130100; }\n",
    "libcublas.so.13": "int cublasGetVersion_v2(void *h, int *v) { *v = 130100; return 0; }\n",
    "libcurand.so.10": "int curandGetVersion(int *v) { *v = 10400; return 0; }\n",
    "libcufft.so.12": "int cufftGetVersion(int *v) { *v = 12000; return 0; }\n",
    "libnvrtc.so.13": "int nvrtcVersion(int *a, int *b) { *a = 13; *b = 0; return 0; }\n",
    "libcudnn.so.9": "#include <stddef.h>\nsize_t cudnnGetVersion(void) { return 91900; }\n",
}
CUDA13 = ("libcublasLt.so.13", "libcublas.so.13", "libnvrtc.so.13", "libcurand.so.10", "libcufft.so.12",
          "libcudart.so.13")

GCC = shutil.which("gcc") or shutil.which("cc")


def build_so(
    out_dir: Path,
    soname: str,
    *,
    needed: tuple[Path, ...] = (),
    source: str | None = None,
    filename: str | None = None,
    extra_args: tuple[str, ...] = (),
) -> Path:
    """Compile ``out_dir/filename`` (default: the soname) with ``-Wl,-soname,<soname>``.

    ``needed`` are other libraries built here; each becomes a DT_NEEDED entry (by its soname, as
    the real linker records it). ``source`` is C code; by default one function named after the soname
    (``libcudart.so.13`` -> ``int libcudart_so_13_marker(void)``) so the symbol is real and unique.
    """
    if GCC is None:
        pytest.skip("gcc is required to build test shared libraries")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / (filename or soname)
    marker = "".join(c if c.isalnum() else "_" for c in soname)
    code = source if source is not None else f"int {marker}_marker(void) {{ return 42; }}\n"
    src = out_dir / f".{target.name}.c"
    src.write_text(code)
    cmd = [GCC, "-shared", "-fPIC", "-o", str(target), str(src), f"-Wl,-soname,{soname}"]
    # Some toolchains (Debian's and Ubuntu's gcc) link with --as-needed by default, which drops a
    # DT_NEEDED whose symbols the code does not use: ask for every dependency to be recorded.
    cmd.append("-Wl,--no-as-needed")
    for dep in needed:
        # Link by full path with -l:file and -L so DT_NEEDED records the dependency's soname, not a path.
        cmd += [f"-L{dep.parent}", f"-l:{dep.name}"]
    cmd += list(extra_args)
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    src.unlink()
    return target
