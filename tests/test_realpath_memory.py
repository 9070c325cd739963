"""``real_path`` resolves each path once inside one check, and never remembers outside it."""

from __future__ import annotations

import os
from pathlib import Path

from ortdoctor.formats.realpath import real_path, remembered_realpaths


def test_inside_one_check_a_path_is_resolved_once_and_outside_every_time(tmp_path: Path) -> None:
    a, b = tmp_path / "a.so", tmp_path / "b.so"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    link = tmp_path / "lib.so"
    link.symlink_to(a)
    with remembered_realpaths():
        assert real_path(str(link)) == str(a)
        link.unlink()
        link.symlink_to(b)
        assert real_path(str(link)) == str(a)  # the check takes the files to stand still
        with remembered_realpaths():  # nested: the same memory
            assert real_path(str(link)) == str(a)
    assert real_path(str(link)) == str(b)  # after the check: the filesystem as it is now
    assert real_path(str(link)) == os.path.realpath(link)
