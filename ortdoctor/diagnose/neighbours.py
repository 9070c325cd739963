"""Rules about what sits beside onnxruntime: PyTorch, onnxruntime-genai and other siblings (TensorRT and the
plugin EPs: :mod:`ortdoctor.diagnose.tensorrt`)."""

from __future__ import annotations

from ortdoctor.core.catalog import make
from ortdoctor.core.facts import (
    ElfInfo,
    Finding,
    PackageStep,
)
from ortdoctor.decide.fixes import step
from ortdoctor.decide.names import major_of
from ortdoctor.diagnose.context import Ctx, cuda_soname
from ortdoctor.diagnose.driver import build_for_major

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def check_torch(ctx: Ctx) -> list[Finding]:
    torch = ctx.env.torch
    if torch is None or not torch.cuda:
        return []
    ort = ctx.env.ort
    reasons = []
    t_major = major_of(torch.cuda)
    if t_major is not None and ctx.cuda_major is not None and t_major != ctx.cuda_major:
        reasons.append(f"CUDA {torch.cuda} vs onnxruntime's CUDA {ort.cuda_version or ctx.cuda_major}")
    o_cudnn = (ctx.plan.cudnn_major if ctx.plan else None) or ort.cudnn_major
    t_cudnn = major_of(torch.cudnn)
    if t_cudnn is not None and o_cudnn is not None and t_cudnn != o_cudnn:
        reasons.append(f"cuDNN {torch.cudnn} vs onnxruntime's cuDNN {o_cudnn}")
    if not reasons:
        return []
    detail = (f"torch {torch.version} ({torch.lib_dir or torch.location}) and {ort.active or 'onnxruntime-gpu'} "
              f"{ort.version}: " + "; ".join(reasons) + ". In one process whichever loads first decides.")
    fixes = []
    torch_steps = _torch_for_major(ctx, ctx.cuda_major)
    if torch_steps:
        fixes.append(f"Move torch to onnxruntime's CUDA: {ctx.run(*torch_steps)}")
    if t_major is not None and t_major != ctx.cuda_major:
        alt = build_for_major(ctx, t_major)
        if alt:
            fixes.append(f"or move onnxruntime to torch's CUDA {t_major}: {ctx.run(*alt)}")
    return [make("torch-cuda-mismatch", detail, "\n".join(fixes) or None, steps=torch_steps)]


def _torch_for_major(ctx: Ctx, major: int | None) -> tuple[PackageStep, ...]:
    if major is None:
        return ()
    for rel in ctx.matrix.torch:  # newest first
        for v in rel.variants:
            if v.cuda != "cpu" and major_of(v.cuda) == major:
                index = ("--index-url", v.index_url) if v.index_url and not v.pypi_default else ()
                return (step("install", "--force-reinstall", f"torch=={rel.version}.*", *index),)
    return ()


def _needed_majors(info: Any) -> dict[str, int]:
    needed = info.needed if isinstance(info, ElfInfo) else getattr(info, "imports", ())
    out: dict[str, int] = {}
    for n in needed:
        m = cuda_soname(n)
        if m and (m.group(1) or m.group(3)) != "cudnn":
            out[n] = int(m.group(2) or m.group(4))
    return out


def check_siblings(ctx: Ctx) -> list[Finding]:
    if ctx.cuda_major is None:
        return []
    lines = []
    for lib in ctx.env.ort.other_cuda_libraries:
        majors = _needed_majors(lib)
        other = {n: m for n, m in majors.items() if m != ctx.cuda_major and not n.lower().startswith("libcufft")
                 and not n.lower().startswith("libcurand")}
        if other:
            lines.append(f"{lib.path} needs {', '.join(other)} (CUDA {sorted(set(other.values()))[0]})")
    if not lines:
        return []
    return [make("sibling-cuda-major-mismatch",
                 f"onnxruntime is built for CUDA {ctx.cuda_major}, but:\n" + "\n".join(lines))]
