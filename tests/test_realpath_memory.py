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


def test_remembered_answers_are_realpaths_answers(tmp_path: Path) -> None:
    """Inside a check a path is resolved from its directory's remembered real path; every answer must be
    the one ``os.path.realpath`` gives: symbolic links to files and to directories, relative and
    absolute targets, chains, dangling links, loops, missing components, ``.`` and ``..``."""
    root = tmp_path / "t"
    (root / "real" / "lib").mkdir(parents=True)
    (root / "real" / "lib" / "libcudart.so.13.0.96").write_bytes(b"x")
    (root / "real" / "lib" / "libcudart.so.13").symlink_to("libcudart.so.13.0.96")
    (root / "dirlink").symlink_to(root / "real")
    (root / "rel").symlink_to("real/lib")
    (root / "chain").symlink_to("dirlink")
    (root / "dangling").symlink_to(root / "nowhere")
    (root / "loop_a").symlink_to("loop_b")
    (root / "loop_b").symlink_to("loop_a")
    names = ["real/lib/libcudart.so.13", "real/lib/libcudart.so.13.0.96", "dirlink/lib/libcudart.so.13",
             "rel/libcudart.so.13", "chain/lib/libcudart.so.13.0.96", "chain/lib", "dangling", "dangling/x",
             "loop_a", "loop_a/x", "missing/lib/x.so", "real/lib/../lib/libcudart.so.13", "real/./lib",
             "dirlink//lib", "real/lib/", "real"]
    paths = [str(root / n) if not n.endswith("/") else str(root / n) + "/" for n in names]
    paths += ["/", "relative/path", str(root)]
    with remembered_realpaths():
        got = {p: real_path(p) for p in paths}
        again = {p: real_path(p) for p in reversed(paths)}
    for p in paths:
        assert got[p] == os.path.realpath(p), p
        assert again[p] == got[p], p
