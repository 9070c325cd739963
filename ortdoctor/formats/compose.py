"""A Compose file's services read line by line: each one's image and whether it asks for GPUs.

Standard library only, no YAML loader (it forgets lines): a service is a key one level under
``services:``; its ``image:`` value and line are kept, and it asks for GPUs with ``gpus:`` (the Compose
specification's service attribute), a device reservation with ``capabilities: [gpu]`` or
``driver: nvidia``, or ``runtime: nvidia``. Anything else is skipped, never an error.
"""

from __future__ import annotations

import re

from ortdoctor.core.record import record

__all__ = ["ComposeService", "read_compose"]


@record
class ComposeService:
    name: str
    line: int  # the service's key
    image: str | None
    image_line: int
    gpus: bool


_GPU = re.compile(r"^\s*(?:gpus\s*:|runtime\s*:\s*[\"']?nvidia|driver\s*:\s*[\"']?nvidia|capabilities\s*:.*\bgpu\b|-\s*[\"']?gpu[\"']?\s*$)")


def read_compose(text: str) -> tuple[ComposeService, ...]:
    out: list[ComposeService] = []
    in_services = False
    service_indent = -1
    current: dict[str, object] | None = None

    def close() -> None:
        if current is not None:
            out.append(ComposeService(str(current["name"]), int(current["line"]),  # type: ignore[call-overload]
                                      current["image"], int(current["image_line"]),  # type: ignore[arg-type, call-overload]
                                      bool(current["gpus"])))

    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.split(" #", 1)[0].rstrip()
        if not stripped.strip() or stripped.lstrip().startswith("#"):
            continue
        indent = len(stripped) - len(stripped.lstrip(" "))
        if indent == 0:
            close()
            current = None
            in_services = stripped.startswith("services:")
            service_indent = -1
            continue
        if not in_services:
            continue
        if service_indent < 0:
            service_indent = indent
        if indent == service_indent and stripped.strip().endswith(":"):
            close()
            current = {"name": stripped.strip()[:-1].strip("\"'"), "line": number, "image": None, "image_line": 0,
                       "gpus": False}
            continue
        if current is None:
            continue
        m = re.match(r"^\s*image\s*:\s*[\"']?([^\"'\s]+)", stripped)
        if m and current["image"] is None:
            current["image"], current["image_line"] = m.group(1), number
        elif _GPU.match(stripped):
            current["gpus"] = True
    close()
    return tuple(out)
