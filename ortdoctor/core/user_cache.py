"""The user's cache directory for ortdoctor: one rule, read by the hook (its validated decision) and by
``check --model`` (where TensorRT engines are advised to go). Imports only :mod:`os`: the hook's fast path
reads it."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["user_cache_dir"]


def user_cache_dir(environ: Mapping[str, str] | None = None) -> str | None:
    """``$ORTDOCTOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/ortdoctor``, else ``~/.cache/ortdoctor``; None when the
    setting is relative (it would follow the current directory, which is no cache)."""
    env = os.environ if environ is None else environ
    home = env.get("HOME") or os.path.expanduser("~")
    base = env.get("ORTDOCTOR_CACHE_DIR") or os.path.join(env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"),
                                                          "ortdoctor")
    return base if os.path.isabs(base) else None
