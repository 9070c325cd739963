"""Build fake site-packages trees with real dist-info files (METADATA, RECORD with real sha256)."""

from __future__ import annotations

import base64
import hashlib
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def install_dist(
    site: Path,
    name: str,
    version: str,
    files: Mapping[str, bytes | Path] | None = None,
    *,
    requires: Iterable[str] = (),
    record: bool = True,
    installer: str = "pip",
) -> Path:
    """Write ``files`` (relative path -> bytes, or a built file to copy) and a .dist-info for them.

    Files are written in the order given; a later distribution writing the same path overwrites it,
    as pip does. Returns the .dist-info directory.
    """
    site.mkdir(parents=True, exist_ok=True)
    dist_info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    rows: list[str] = []
    for rel, content in (files or {}).items():
        target = site / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copyfile(content, target)
            data = content.read_bytes()
        else:
            target.write_bytes(content)
            data = content
        rows.append(f"{rel},{record_hash(data)},{len(data)}")
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    (dist_info / "METADATA").write_text("\n".join(meta) + "\n\nA description that is not parsed.\nName: nope\n")
    (dist_info / "INSTALLER").write_text(installer + "\n")
    info_rel = dist_info.name
    rows += [f"{info_rel}/METADATA,,", f"{info_rel}/INSTALLER,,", f"{info_rel}/RECORD,,"]
    if record:
        (dist_info / "RECORD").write_text("\n".join(rows) + "\n")
    return dist_info


def add_plain_dists(site: Path, count: int) -> None:
    """``count`` unrelated small distributions, as a big environment has."""
    for i in range(count):
        install_dist(site, f"filler-package-{i}", "1.0", {f"filler_package_{i}/__init__.py": b""})
