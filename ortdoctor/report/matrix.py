"""Text and JSON views of the compatibility matrix for ``ortdoctor matrix``. Renderers return strings."""

from __future__ import annotations

import json
from typing import Any

from ortdoctor.core.facts import to_jsonable
from ortdoctor.core.shell import posix_join
from ortdoctor.decide.kernels import describe_archs
from ortdoctor.decide.matrix.model import (
    Feed,
    LibSpec,
    Matrix,
    Recommendation,
    Release,
    ReleaseMatch,
    glibc_floor,
)

__all__ = [
    "matrix_json", "recommendation_json", "release_json", "render_recommendation", "render_release",
    "render_table",
]


def _feeds_short(release: Release) -> str:
    parts = []
    for feed in release.feeds:
        only = f" ({', '.join(feed.versions)})" if feed.versions else ""
        parts.append(f"CUDA {feed.cuda}/cuDNN {feed.cudnn_major if feed.cudnn_major is not None else '?'}{only}")
    return "; ".join(parts) or "-"


def wheels_short(release: Release) -> str:
    """The PyPI wheels of a line: ``linux_x86_64 (glibc 2.28), linux_aarch64 (glibc 2.34), win_amd64``."""
    parts = []
    for platform, tag in release.wheel_platforms.items():
        floor = glibc_floor(tag)
        parts.append(f"{platform} (glibc {floor[0]}.{floor[1]})" if floor else platform)
    return ", ".join(parts) or ("-" if not release.pypi else "not recorded")


def lines_with_wheel(matrix: Matrix, platform: str) -> str:
    """The release lines PyPI has a wheel of for ``platform``, as a span: ``1.29-1.31``, or ``none``."""
    lines = [r.line for r in matrix.releases if r.pypi and r.wheel_platforms and r.has_wheel(platform)]
    if not lines:
        return "none"
    return lines[0] if len(lines) == 1 else f"{lines[-1]}-{lines[0]}"


def tegra_route(matrix: Matrix, gpus: tuple[tuple[int, int], ...], platform: str) -> str:
    """For a Jetson (Tegra) GPU on aarch64: where its wheels come from, as a sentence ("" otherwise)."""
    jetson = matrix.jetson
    if jetson is None or platform != "linux_aarch64":
        return ""
    tegra = {f"{cc[0]}.{cc[1]}" for cc in gpus} & set(jetson.socs.values())
    if not tegra:
        return ""
    by_url: dict[str, list[str]] = {}
    for f in jetson.feeds:
        by_url.setdefault(f.index_url, []).append(f.jetpack)
    routes = "; ".join(f"JetPack {', '.join(majors)}: {url}" for url, majors in by_url.items())
    return f". A Jetson GPU runs the JetPack builds instead ({routes})"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()
    rule = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join([line, rule, *body])


def render_table(matrix: Matrix, platform: str | None = None, gpu: tuple[int, int] | None = None) -> str:
    """Every release line, one row each, then the driver minimums and the torch variants. With ``platform``
    only the lines PyPI has a wheel of for it (and with ``gpu``, whose wheel there runs on it)."""
    rows = []
    shown = [r for r in matrix.releases if platform is None or (r.pypi and r.has_wheel(platform))]
    if gpu is not None and platform is not None:
        runs = {k.release.line for k in matrix.kernel_releases(gpu, platform=platform)}
        shown = [r for r in shown if r.line in runs]
    for r in shown:
        bad = ", ".join(f"{kb.version}" + (f" ({kb.affects})" if kb.affects else "") for kb in r.known_bad)
        rows.append([
            r.line,
            ", ".join(r.versions) or "(not on PyPI)",
            r.cuda,
            str(r.cudnn_major) if r.cudnn_major is not None else "?",
            _feeds_short(r),
            r.torch or "-",
            r.source,
            bad or "-",
        ])
    head = [f"onnxruntime-gpu compatibility matrix ({matrix.path})", ""]
    if platform is not None:
        gpu_text = f" that runs on sm_{gpu[0]}{gpu[1]}" if gpu is not None else ""
        head = [f"onnxruntime-gpu compatibility matrix ({matrix.path}): the lines with a PyPI {platform} "
                f"wheel{gpu_text}", ""]
        if not shown:
            route = tegra_route(matrix, (gpu,), platform) if gpu is not None else ""
            head += [f"PyPI has no onnxruntime-gpu {platform} wheel{gpu_text}{route}.", ""]
    out = [*head,
           _table(["line", "versions", "CUDA", "cuDNN", "other builds", "torch", "source", "known bad"], rows),
           "", "Minimum NVIDIA driver per CUDA major:"]
    drows = []
    for major in sorted(matrix.cuda_majors):
        cm = matrix.cuda_majors[major]
        drows.append([f"CUDA {major}", cm.min_driver_linux, cm.min_driver_windows, cm.driver_source])
    out.append(_table(["CUDA", "Linux", "Windows", "source"], drows))
    out += ["", "PyTorch CUDA builds (* = the PyPI default):"]
    trows = []
    for t in matrix.torch:
        variants = ", ".join(f"{v.tag}{'*' if v.pypi_default else ''} (cuDNN {v.cudnn or '?'})"
                             for v in t.variants)
        trows.append([t.version, variants])
    out.append(_table(["torch", "variants"], trows))
    out += ["", "Show one release: ortdoctor matrix --ort 1.20.2    "
                "Choose a build: ortdoctor matrix --cuda 12 --torch 2.4"]
    return "\n".join(out) + "\n"


def _lib_line(lib: LibSpec) -> str:
    where = ", ".join(lib.linux_dirs) or "-"
    extra = f"  [{lib.package}: {where}]" if lib.package else ""
    return f"  {lib.soname:<40} {lib.load:<8} {lib.windows_dll or '-':<34}{extra}"


def _tensorrt_lines(matrix: Matrix, r: Release) -> list[str]:
    """The TensorRT EP's needs: the major it links, the minor it was built with where documented, the pin."""
    trt = [s for s in r.tensorrt_needed if s.startswith("libnv")]
    facts = matrix.tensorrt
    if not trt or facts is None:
        return []
    major = int(trt[0].rsplit(".", 1)[-1])
    build = facts.build_for(r.line)
    built = f"built with TensorRT {build.tensorrt}, {build.source.split()[0]}" if build else "minor not published"
    out = [f"  TensorRT EP DT_NEEDED: {', '.join(trt)} (TensorRT {major}; {built})"]
    pip = facts.pip_for(major, r.cuda_major)
    if pip is not None:
        line = posix_join(["pip", "install", pip.spec(major), "--extra-index-url", facts.index_url])
        out.append(f"                {line}")
    return out


def render_release(matrix: Matrix, match: ReleaseMatch) -> str:
    """One release line in full: builds, libraries, driver, torch, known problems, sources."""
    r = match.release
    out = [f"onnxruntime-gpu {r.line} ({', '.join(r.versions) or 'not on PyPI'})"]
    if not match.exact or match.unverified:
        out.append(f"  note: {match.note}")
    cudnn = f"{r.cudnn_major}" + (f" ({r.cudnn})" if r.cudnn and r.cudnn != f"{r.cudnn_major}.x" else "")
    out += [
        f"  PyPI build:   CUDA {r.cuda}, cuDNN {cudnn}",
        f"  source:       {r.source}: {r.source_ref}",
    ]
    for version, wheel in sorted(r.wheels.items()):
        if wheel != r.source_ref:
            out.append(f"                also read: {wheel} ({version})")
    if r.python:
        out.append(f"  Python:       {', '.join(r.python)}")
    if r.wheel_platforms:
        out.append(f"  PyPI wheels:  {wheels_short(r)}")
    if r.torch:
        out.append(f"  torch:        {r.torch} (CUDA/cuDNN majors agree)")
    for feed in r.feeds:
        only = f" [{', '.join(feed.versions)} only]" if feed.versions else ""
        out.append(f"  other build:  CUDA {feed.cuda}, cuDNN {feed.cudnn_major}{only} from {feed.index_url}")
        if feed.note:
            out.append(f"                {feed.note}")
    if r.extras:
        for name, reqs in r.extras.items():
            out.append(f"  extra [{name}]: {', '.join(reqs)}")
    if r.provider_needed:
        out.append(f"  CUDA provider DT_NEEDED: {', '.join(r.provider_needed)}")
    if r.windows_needed:
        out.append(f"  CUDA provider imports (win_amd64): {', '.join(r.windows_needed)}")
    if r.pybind_needed_cuda:
        out.append(f"  pybind module DT_NEEDED: {', '.join(r.pybind_needed_cuda)} (import needs them)")
    out += _tensorrt_lines(matrix, r)
    for platform in ("linux_x86_64", *r.platform_archs):
        kernels = r.kernels_for(platform)
        if kernels is not None:
            lone = f"; {', '.join(kernels.isolated)} only in single-GPU kernels" if kernels.isolated else ""
            out.append(f"  kernels ({platform}): {describe_archs(kernels.archs, kernels.ptx_isa)}{lone}")
    libs = matrix.libraries_for_release(r)
    if libs:
        out += ["", "  Libraries (load order; required = loaded with the provider, lazy = when first used):"]
        out += [_lib_line(lib) for lib in libs]
    cm = matrix.cuda_majors.get(r.cuda_major)
    if cm is not None:
        out += ["", f"  Minimum driver for CUDA {r.cuda}: Linux {matrix.min_driver(r.cuda, 'linux')}, "
                    f"Windows {matrix.min_driver(r.cuda, 'windows')} ({cm.driver_source})"]
    for kb in r.known_bad:
        out += ["", f"  KNOWN BAD {kb.version}" + (f" ({kb.affects})" if kb.affects else "") + f": {kb.problem}",
                f"    fix: {kb.fix}"]
    if r.notes:
        out += ["", "  Notes:"] + [f"  - {n}" for n in r.notes]
    return "\n".join(out) + "\n"


def render_recommendation(rec: Recommendation, cuda: str | None, torch: str | None, gpu: str | None = None) -> str:
    asked = ", ".join(x for x in (f"CUDA {cuda}" if cuda else "", f"torch {torch}" if torch else "",
                                  f"GPU {gpu}" if gpu else "") if x)
    r = rec.release
    out = [f"For {asked or 'this machine'}: onnxruntime-gpu {rec.version}", "", f"  {rec.command}", "",
           f"  Why: {rec.reason}"]
    if rec.alternative:
        out += ["", "  A newer line for the same CUDA/cuDNN majors lives on an alternative feed:",
                f"  {rec.alternative}"]
    if r.source == "doc":
        out += ["", f"  (facts for {r.line} are from the documentation: {r.source_ref})"]
    return "\n".join(out) + "\n"


def _release_dict(matrix: Matrix, release: Release, feed: Feed | None = None) -> dict[str, Any]:
    data: dict[str, Any] = to_jsonable(release)
    data["cuda_major"] = release.cuda_major
    # every platform's kernel targets with the wheel they were read from, the Linux x86_64 one included
    data["kernels"] = {platform: to_jsonable(release.kernels_for(platform))
                       for platform in ("linux_x86_64", *release.platform_archs)}
    return data


def matrix_json(matrix: Matrix) -> str:
    data = {"matrix": matrix.path, "schema": matrix.schema, "feeds": matrix.feeds,
            "releases": [_release_dict(matrix, r) for r in matrix.releases],
            "cuda_majors": to_jsonable(matrix.cuda_majors), "cudnn_majors": to_jsonable(matrix.cudnn_majors),
            "torch": to_jsonable(matrix.torch), "tensorrt": to_jsonable(matrix.tensorrt)}
    return json.dumps(data, indent=2) + "\n"


def release_json(matrix: Matrix, query: str, match: ReleaseMatch) -> str:
    r = match.release
    data = {
        "matrix": matrix.path,
        "query": {"ort": query},
        "exact": match.exact,
        "unverified": match.unverified,
        "note": match.note,
        "release": _release_dict(matrix, r),
        "libraries": to_jsonable(matrix.libraries_for_release(r)),
        "min_driver": {"linux": matrix.min_driver(r.cuda, "linux"),
                       "windows": matrix.min_driver(r.cuda, "windows")},
    }
    return json.dumps(data, indent=2) + "\n"


def recommendation_json(matrix: Matrix, cuda: str | None, torch: str | None,
                        rec: Recommendation | None, *, gpus: list[str] | None = None,
                        platform: str | None = None) -> str:
    data: dict[str, Any] = {"matrix": matrix.path, "query": {"cuda": cuda, "torch": torch}}
    if gpus:
        data["query"].update(gpus=gpus, platform=platform)
    if rec is None:
        data["recommendation"] = None
    else:
        build_cuda = rec.feed.cuda if rec.feed else rec.release.cuda
        data["recommendation"] = {
            "version": rec.version,
            "line": rec.release.line,
            "cuda": build_cuda,
            "cudnn_major": rec.feed.cudnn_major if rec.feed else rec.release.cudnn_major,
            "index_url": rec.feed.index_url if rec.feed else None,
            "command": rec.command,
            "alternative": rec.alternative or None,
            "reason": rec.reason,
            "torch_variant": to_jsonable(rec.torch_variant),
            "source": rec.release.source,
            "source_ref": rec.release.source_ref,
            "kernels": to_jsonable(rec.kernels),
        }
    return json.dumps(data, indent=2) + "\n"
