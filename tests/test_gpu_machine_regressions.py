"""Regressions from a real GPU machine, rebuilt here without a GPU.

The machine: onnxruntime-gpu 1.31.1 in a ``pip install --target`` directory on PYTHONPATH (and, at
first, the CPU onnxruntime 1.30.0 in the venv); torch 2.11.0 with the CUDA 13 NVIDIA wheels
(``nvidia/cu13/lib``, cuDNN 9.19.0.56 in ``nvidia/cudnn/lib``); a system CUDA 13.0 toolkit in
``/usr/local/cuda-13.0`` (``lib64`` links to ``targets/x86_64-linux/lib``, whose files are
``libcudart.so.13.0.96`` and friends, listed in the ld.so.cache) and a system cuDNN 9.14.0 in
``/lib/x86_64-linux-gnu``. The same tree is built under ``tmp_path`` with gcc-built libraries of the
real file names; the resolver lists it for real, the diagnosis and the renderers run unchanged.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ortdoctor.core.facts import (
    ElfInfo,
    Environment,
    Finding,
    NvidiaWheel,
    OrtDistribution,
    OrtInfo,
    Plan,
    PythonInfo,
    SearchDir,
    SystemInfo,
    TorchInfo,
)
from ortdoctor.decide.resolve import resolve
from ortdoctor.diagnose.checklist import diagnose
from ortdoctor.prove.smoke.runner import SmokeResult
from ortdoctor.report.model import Report, verdict_of
from ortdoctor.report.text import render
from tests.support.sharedlibs import build_so
from tests.test_diagnose import MATRIX, PROVIDER_NEEDED, driver_ok

CUDA_FILES = {  # soname -> the toolkit's real file name
    "libcublasLt.so.13": "libcublasLt.so.13.1.0.3",
    "libcublas.so.13": "libcublas.so.13.1.0.3",
    "libnvrtc.so.13": "libnvrtc.so.13.0.88",
    "libcurand.so.10": "libcurand.so.10.4.0.35",
    "libcufft.so.12": "libcufft.so.12.0.0.61",
    "libcudart.so.13": "libcudart.so.13.0.96",
}
CUDNN_SONAMES = ("libcudnn.so.9", *(f"libcudnn_{s}.so.9" for s in (
    "graph", "ops", "cnn", "adv", "heuristic", "engines_precompiled", "engines_runtime_compiled")))
WHEELS = (  # name, version, sonames (lib dir: cu13 unless cuDNN)
    ("nvidia-cublas", "13.1.0.3", ("libcublasLt.so.13", "libcublas.so.13")),
    ("nvidia-cuda-nvrtc", "13.0.88", ("libnvrtc.so.13",)),
    ("nvidia-curand", "10.4.0.35", ("libcurand.so.10",)),
    ("nvidia-cufft", "12.0.0.61", ("libcufft.so.12",)),
    ("nvidia-cuda-runtime", "13.0.96", ("libcudart.so.13",)),
    ("nvidia-cudnn-cu13", "9.19.0.56", CUDNN_SONAMES),
)


class Machine:
    """The paths of the rebuilt tree."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.site = root / "venv/lib/python3.12/site-packages"
        self.target = root / "ortgpu"
        self.cu13 = self.site / "nvidia/cu13/lib"
        self.cudnn = self.site / "nvidia/cudnn/lib"
        self.toolkit = root / "usr/local/cuda-13.0"
        self.targets = self.toolkit / "targets/x86_64-linux/lib"
        self.cuda = root / "usr/local/cuda"
        self.syslib = root / "lib/x86_64-linux-gnu"
        self.python = root / "venv/bin/python3"


def _link(path: Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


def build_machine(root: Path) -> Machine:
    m = Machine(root)
    for soname in CUDA_FILES:
        build_so(m.cu13, soname)
    for soname in CUDNN_SONAMES:
        build_so(m.cudnn, soname)
    (m.site / "torch/lib").mkdir(parents=True)
    # the toolkit: real files with the full version, the soname a symlink; lib64 -> targets/.../lib
    for soname, real in CUDA_FILES.items():
        build_so(m.targets, soname, filename=real)
        _link(m.targets / soname, real)
    _link(m.toolkit / "lib64", "targets/x86_64-linux/lib")
    _link(m.cuda, "cuda-13.0")
    for soname in CUDNN_SONAMES:
        build_so(m.syslib, soname, filename=soname + ".14.0")
        _link(m.syslib / soname, soname + ".14.0")
    (m.target / "onnxruntime/capi").mkdir(parents=True)
    return m


def machine_env(m: Machine, *, cpu_package_too: bool = False, **kw: Any) -> Environment:
    pkg = str(m.target / "onnxruntime")
    dists = [OrtDistribution("onnxruntime-gpu", "1.31.1", str(m.target),
                             str(m.target / "onnxruntime_gpu-1.31.1.dist-info"), owns_files_on_disk=True)]
    if cpu_package_too:
        dists.append(OrtDistribution("onnxruntime", "1.30.0", str(m.site), str(m.site / "onnxruntime-1.30.0.dist-info"),
                                     owns_files_on_disk=True))
    ort = OrtInfo(installed=True, distributions=tuple(dists), package_dir=pkg, active="onnxruntime-gpu",
                  version="1.31.1", package_name="onnxruntime-gpu", cuda_version="13.0", cudnn_major=9,
                  is_gpu_build=True,
                  cuda_provider=ElfInfo(f"{pkg}/capi/libonnxruntime_providers_cuda.so", "x86_64", 64,
                                        needed=PROVIDER_NEEDED),
                  pybind=ElfInfo(f"{pkg}/capi/onnxruntime_pybind11_state.so", "x86_64", 64, needed=("libc.so.6",)))
    python = PythonInfo(version="3.12.3", executable=str(m.root / "venv/bin/python3"), implementation="CPython",
                        platform="linux-x86_64", machine="x86_64", os="linux", libc="glibc 2.39",
                        venv=str(m.root / "venv"), site_dirs=(str(m.target), str(m.site)),
                        multiprocessing_start_method="spawn")
    wheels = tuple(
        NvidiaWheel(name, version, str(m.site), (str(m.cudnn if "cudnn" in name else m.cu13),), sonames, 13)
        for name, version, sonames in WHEELS)
    ldconfig: dict[str, tuple[str, ...]] = {so: (str(m.cuda / "targets/x86_64-linux/lib" / so),) for so in CUDA_FILES}
    ldconfig.update({so: (str(m.syslib / so),) for so in CUDNN_SONAMES})
    system = SystemInfo(cuda_home=str(m.cuda), ldconfig=ldconfig,
                        ld_library_path=(SearchDir(str(m.root / "usr/local/nvidia/lib64"), "LD_LIBRARY_PATH",
                                                   exists=False),),
                        default_dirs=(SearchDir(str(m.root / "usr/lib"), "default", exists=False),))
    torch = TorchInfo("2.11.0", "13.0", "9.19.0", str(m.site / "torch/lib"), str(m.site))
    env = Environment(python=python, ort=ort, torch=torch, nvidia_wheels=wheels, system=system, driver=driver_ok())
    return replace(env, **kw)


SMOKE_OK = SmokeResult(ran=True, ok=True, providers=("CUDAExecutionProvider", "CPUExecutionProvider"), device_id=0,
                       timings_ms={"preload": 256.354, "import": 258.246, "session": 347.751, "first_run": 57.691,
                                   "run": 0.086})


def check(env: Environment, *, directory: str | None = None, smoke: Any = SMOKE_OK) -> tuple[Plan, list[Finding], str]:
    plan = resolve(env, MATRIX, directory=directory)
    findings = diagnose(env, plan, MATRIX, smoke)
    report = Report(verdict=verdict_of(findings), findings=tuple(findings), env=env, plan=plan, matrix_path="<test>",
                    smoke=smoke, directory=directory)
    return plan, findings, render(report)


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    return build_machine(tmp_path_factory.mktemp("gpu-machine"))


def by_id(findings: list[Finding], fid: str) -> Finding:
    hits = [f for f in findings if f.id == fid]
    assert len(hits) == 1, (fid, [f.id for f in findings])
    return hits[0]


# ------------------------------------------------------------------------------------------------
# The resolver: versions from the real file name, one candidate per file
# ------------------------------------------------------------------------------------------------
def test_toolkit_candidates_carry_the_version_of_their_real_file_and_appear_once(machine: Machine) -> None:
    plan = resolve(machine_env(machine), MATRIX)
    cudart = next(lp for lp in plan.libraries if lp.name == "cudart")
    assert cudart.chosen is not None
    assert cudart.chosen.path == str(machine.cu13 / "libcudart.so.13")
    assert cudart.chosen.version == "13.0.96"
    toolkit = [c for c in cudart.candidates if c.source != "nvidia-wheel"]
    # /usr/local/cuda/lib64/x and /usr/local/cuda/targets/x86_64-linux/lib/x (the ld.so.cache) are one file
    assert len(toolkit) == 1, toolkit
    assert toolkit[0].version == "13.0.96"
    cudnn = next(lp for lp in plan.libraries if lp.name == "cudnn")
    assert {c.version for c in cudnn.candidates} == {"9.19.0.56", "9.14.0"}


# ------------------------------------------------------------------------------------------------
# 1. the default loader takes other copies: not "in no directory the loader searches"
# ------------------------------------------------------------------------------------------------
def test_default_loader_copies_are_named_instead_of_needs_preload(machine: Machine) -> None:
    _plan, found, text = check(machine_env(machine))
    ids = [f.id for f in found]
    assert "cuda-lib-not-loadable" not in ids
    f = by_id(found, "default-loader-picks-other-copy")
    assert f.severity == "warning"
    assert "9.14.0 instead of the chosen 9.19.0.56" in f.detail
    assert str(machine.syslib) in f.detail
    assert "ld.so.cache" in f.detail
    assert str(machine.cuda / "targets/x86_64-linux/lib") in f.detail
    assert "the same versions as the chosen" in f.detail  # the toolkit's CUDA 13.0 files
    assert "the same files PyTorch 2.11.0 loads" in f.detail
    assert "libcudnn.so.9 9.14.0 instead of 9.19.0.56" in f.detail
    assert f.fix is not None
    assert f.fix.startswith("export LD_LIBRARY_PATH=")  # the shell line first, alone on its line
    assert "import ortdoctor.hook" in f.fix
    assert str(machine.cu13) in f.fix
    assert "import torch before onnxruntime" in f.fix
    # the Libraries rows say where the loader would take each from; no "(needs preload)" noise
    assert "(needs preload)" not in text
    assert "(default loader: system 9.14.0)" in text
    assert "(default loader: CUDA toolkit 13.0.96)" in text


def test_same_version_copies_without_torch_are_only_a_note(machine: Machine) -> None:
    env = machine_env(machine, torch=None)
    _plan, found, _ = check(replace(env, system=replace(env.system, ldconfig={
        so: p for so, p in env.system.ldconfig.items() if "cudnn" not in so})))
    f = by_id(found, "default-loader-picks-other-copy")
    assert f.severity == "info"
    assert "cuda-lib-not-loadable" in [x.id for x in found]  # cuDNN: no loader-visible copy at all
    assert "libcudnn.so.9" in by_id(found, "cuda-lib-not-loadable").detail


def test_no_copy_anywhere_keeps_cuda_lib_not_loadable(machine: Machine) -> None:
    env = machine_env(machine, torch=None)
    env = replace(env, system=replace(env.system, ldconfig={}, cuda_home=None))
    _plan, found, text = check(env)
    assert "default-loader-picks-other-copy" not in [f.id for f in found]
    assert "no other copy is there either" in by_id(found, "cuda-lib-not-loadable").detail
    assert "(needs preload)" in text


# ------------------------------------------------------------------------------------------------
# 2. copies grouped by family and location
# ------------------------------------------------------------------------------------------------
def test_multiple_copies_are_grouped_by_family_and_location(machine: Machine) -> None:
    _plan, found, _ = check(machine_env(machine))
    f = by_id(found, "lib-multiple-copies")
    # cuDNN 9.14.0 vs 9.19.0.56: the risk is told once, as default-loader-picks-other-copy (a warning)
    assert f.severity == "info"
    assert by_id(found, "default-loader-picks-other-copy").severity == "warning"
    lines = f.detail.splitlines()
    assert len(lines) == 3, lines  # two families, then the pointer to the loader warning
    cudnn = next(line for line in lines if line.startswith("cuDNN 9"))
    assert cudnn.startswith("cuDNN 9 (8 files): NVIDIA wheel 9.19.0.56 in ")
    assert f"{machine.cudnn} (chosen)" in cudnn
    assert f"system 9.14.0 in {machine.syslib}" in cudnn
    cuda = next(line for line in lines if line.startswith("CUDA 13"))
    assert cuda.startswith("CUDA 13 libraries (cublasLt, cublas, nvrtc, curand, cufft, cudart): NVIDIA wheel in ")
    assert "CUDA toolkit in " in cuda
    assert "(same versions)" in cuda


def test_same_version_copies_only_are_a_note(machine: Machine) -> None:
    env = machine_env(machine, torch=None)
    env = replace(env, system=replace(env.system, ldconfig={}))
    plan = resolve(env, MATRIX)
    # drop the system cuDNN: only the toolkit's same-version CUDA copies remain
    plan = replace(plan, libraries=tuple(
        replace(lp, candidates=tuple(c for c in lp.candidates if c.source != "system")) for lp in plan.libraries))
    f = by_id(diagnose(env, plan, MATRIX), "lib-multiple-copies")
    assert f.severity == "info"
    assert len(f.detail.splitlines()) == 1


# ------------------------------------------------------------------------------------------------
# 3. PyTorch: the same files, or a different copy
# ------------------------------------------------------------------------------------------------
def test_torch_and_ortdoctor_share_the_wheels(machine: Machine) -> None:
    _plan, found, _ = check(machine_env(machine))
    f = by_id(found, "torch-shares-libraries")
    assert f.severity == "info"
    assert "importing torch before or after onnxruntime reuses the same files" in f.detail
    assert "torch-loads-other-copy" not in [x.id for x in found]


def test_directory_on_the_system_toolkit_loads_another_cudnn_than_torch(machine: Machine) -> None:
    _plan, found, _ = check(machine_env(machine), directory=str(machine.toolkit / "lib64"))
    f = by_id(found, "torch-loads-other-copy")
    assert f.severity == "warning"
    assert (f"libcudnn.so.9: onnxruntime gets system {machine.syslib}, torch's own are in {machine.cudnn} "
            "(9.14.0 vs torch's 9.19.0.56)") in f.detail
    assert "(the same versions)" in f.detail  # the toolkit's CUDA files: same versions, other files
    assert "libcudnn.so.9 9.14.0 instead of its 9.19.0.56" in f.detail
    assert "whichever is loaded first wins" in f.detail
    assert f.fix is not None
    assert "import torch first" in f.fix
    assert "drop --directory" in f.fix
    assert "torch-shares-libraries" not in [x.id for x in found]


# ------------------------------------------------------------------------------------------------
# 4. two distributions in different site directories
# ------------------------------------------------------------------------------------------------
def test_shadowed_cpu_package_in_the_venv(machine: Machine) -> None:
    _plan, found, text = check(machine_env(machine, cpu_package_too=True))
    f = by_id(found, "ort-multiple-packages")
    assert f.severity == "warning"  # the GPU build is the one imported and it works
    assert "its files are the ones on disk" not in f.detail
    assert f"onnxruntime-gpu 1.31.1 in {machine.target}: `import onnxruntime` takes this one" in f.detail
    assert f"onnxruntime 1.30.0 in {machine.site}: shadowed" in f.detail
    assert "flips" in f.detail
    assert "pip sees both" in f.detail
    assert f.fix is not None
    assert f.fix.startswith(f"{machine.python} -m pip uninstall -y onnxruntime\n# removes onnxruntime from ")
    assert "onnxruntime-gpu" not in f.fix.split("#")[0]
    assert "also installed, shadowed: onnxruntime 1.30.0" in text


def test_shadowed_gpu_package_in_a_target_dir(machine: Machine) -> None:
    env = machine_env(machine, cpu_package_too=True)
    # the CPU wheel wins: the --target directory comes after the venv on sys.path
    pkg = str(machine.site / "onnxruntime")
    ort = replace(env.ort, package_dir=pkg, active="onnxruntime", package_name="onnxruntime", cuda_version=None,
                  is_gpu_build=False, version="1.30.0")
    f = by_id(diagnose(replace(env, ort=ort), None, MATRIX), "ort-multiple-packages")
    assert f.severity == "error"
    assert f.fix is not None
    assert f.fix.startswith(f"{machine.python} -m pip uninstall -y onnxruntime\n# ")
    assert f"takes onnxruntime-gpu 1.31.1 from {machine.target}" in f.fix


def test_a_target_dir_is_moved_aside(machine: Machine) -> None:
    """pip does not manage a --target directory: the copy's directories go into a backup folder there
    (nothing deleted), with the paths quoted; ``ortdoctor fix`` runs the same move."""
    env = machine_env(machine, cpu_package_too=True)
    target_cpu = OrtDistribution("onnxruntime", "1.30.0", str(machine.root / "cpu-target"),
                                 str(machine.root / "cpu-target/onnxruntime-1.30.0.dist-info"), owns_files_on_disk=True)
    env = replace(env, ort=replace(env.ort, distributions=(env.ort.distributions[0], target_cpu)))
    f = by_id(diagnose(env, None, MATRIX), "ort-multiple-packages")
    assert f.fix is not None
    backup = f"{machine.root}/cpu-target/ortdoctor-backup"
    assert f.fix.startswith(f"mkdir -p -- {backup} && mv -- {machine.root}/cpu-target/onnxruntime "
                            f"{target_cpu.dist_info} {backup}\n")
    assert "rm " not in f.fix
    assert f"drop {machine.root}/cpu-target from PYTHONPATH" in f.fix
    assert [c.kind for c in f.commands] == ["move"]


# ------------------------------------------------------------------------------------------------
# 5. the Smoke line: the classified cause, short timings
# ------------------------------------------------------------------------------------------------
def test_smoke_line_timings_have_at_most_one_decimal(machine: Machine) -> None:
    _plan, _found, text = check(machine_env(machine))
    assert "preload 256 ms, import 258 ms, session 348 ms, first run 57.7 ms, steady run 0.09 ms" in text


def test_failed_smoke_shows_the_classified_cause_not_a_cut_message(machine: Machine) -> None:
    from ortdoctor.diagnose.classify import classify

    log = ("2026-12-02 17:00:52.799923858 [E:onnxruntime:Default, cuda_call.cc:148 CudaCall] CUDA failure 100: "
           "no CUDA-capable device is detected ; GPU=-1 ; hostname=vm ; file=cuda_execution_provider_info.cc ; "
           "line=70 ; expr=cudaGetDeviceCount(&num_devices);")
    error = ("RuntimeError: /onnxruntime_src/onnxruntime/core/providers/cuda/cuda_execution_provider_info.cc:63 static "
             "onnxruntime::CUDAExecutionProviderInfo onnxruntime::CUDAExecutionProviderInfo::FromProviderOptions(...) "
             "[ONNXRuntimeError] : 1 : FAIL : " + log)
    causes = tuple(classify(log))
    assert causes
    assert causes[0].finding_id == "no-gpu-visible"
    smoke = SmokeResult(ran=True, ok=False, device_id=0, error=error, finding_id="smoke-failed", causes=causes,
                        timings_ms={"preload": 175.537, "import": 199.291, "session": 36.475})
    _plan, found, text = check(machine_env(machine), smoke=smoke)
    smoke_block = text.split("Smoke", 1)[1].split("\n\n", 1)[0]
    assert "cause: " in smoke_block
    assert "[no-gpu-visible]" in smoke_block
    assert "RuntimeError" not in smoke_block
    assert "cuda_execution_provider_info" not in smoke_block
    assert "session 36.5 ms" in smoke_block
    # the cause carries ORT's line; no second error only says "the smoke session failed"
    assert "cudaGetDeviceCount" in by_id(found, "no-gpu-visible").detail
    assert "smoke-failed" not in [f.id for f in found]


def test_preload_of_the_system_toolkit_warns_that_torch_uses_other_files(machine: Machine) -> None:
    from ortdoctor.preloading.preloader import preload
    from ortdoctor.report.preload import render_text

    result = preload(directory=str(machine.toolkit / "lib64"), dry_run=True, env=machine_env(machine), matrix=MATRIX)
    f = by_id(result.findings, "torch-loads-other-copy")
    assert "libcudnn.so.9 9.14.0 instead of its 9.19.0.56" in f.detail
    assert f.fix is not None
    assert "drop --directory" in f.fix
    assert result.to_json()["findings"][-1]["id"] == "torch-loads-other-copy"
    text = render_text(result)
    assert "[torch-loads-other-copy]" in text
    assert "    A process holds one library per soname" in text  # every detail line indented


def test_preload_of_torchs_wheels_says_nothing_about_torch(machine: Machine) -> None:
    from ortdoctor.preloading.preloader import preload

    for directory in (None, ""):
        result = preload(directory=directory, dry_run=True, env=machine_env(machine), matrix=MATRIX)
        assert "torch-loads-other-copy" not in [f.id for f in result.findings]
        assert {x.source for x in result.loaded} == {"nvidia-wheel"}


def test_preload_with_a_directory_still_names_torchs_own_files(machine: Machine) -> None:
    """--directory hides the wheels from the plan; torch's files are told from the wheels' file lists."""
    from ortdoctor.preloading.preloader import preload

    env = machine_env(machine)
    result = preload(directory=str(machine.toolkit / "lib64"), dry_run=True, env=env, matrix=MATRIX)
    assert "libcudnn.so.9 9.14.0 instead of its" in by_id(result.findings, "torch-loads-other-copy").detail


# ------------------------------------------------------------------------------------------------
# 7. the Model section: node counts and a share that matches the counts shown
# ------------------------------------------------------------------------------------------------
def test_model_placement_share_matches_the_counts_shown() -> None:
    from ortdoctor.diagnose.model import Placement
    from ortdoctor.prove.model_check.inspect import ModelInspection
    from ortdoctor.report.model import ModelReport
    from ortdoctor.report.model_check import render_model

    # the dynamically quantized model of the GPU run: 7 final nodes, 2 of them Memcpy on the CUDA side
    placement = Placement(source=("verbose-log",),
                          nodes_by_provider={"CUDAExecutionProvider": 5, "CPUExecutionProvider": 2},
                          op_types_by_provider={"CUDAExecutionProvider": {"Cast": 1, "MemcpyFromHost": 2, "Mul": 2},
                                                "CPUExecutionProvider": {"DynamicQuantizeLinear": 1,
                                                                         "MatMulInteger": 1}},
                          memcpy_nodes=2, gpu_share=0.6, final_graph_nodes=7)
    inspection = ModelInspection("/m/quantized.onnx", file_bytes=4500, ir_version=8, opsets={"": 17}, node_count=5,
                                 node_count_all=5)
    text = render_model(ModelReport("/m/quantized.onnx", inspection, ran=True, cuda_ep_active=True,
                                    providers=("CUDAExecutionProvider",), placement=placement))
    assert "60% of nodes on the CUDA EP (5 compute nodes: CPU 2, CUDA 3; plus 2 Memcpy nodes onnxruntime inserted)" \
        in text
    assert "opset ai.onnx 17, 5 nodes\n" in text
    assert "with subgraphs" not in text
    looped = render_model(ModelReport("/m/loop.onnx", ModelInspection("/m/loop.onnx", file_bytes=439, ir_version=8,
                                                                       opsets={"": 17}, node_count=1,
                                                                       node_count_all=3)))
    assert "1 nodes, 3 counting subgraphs" not in looped
    assert "1 node, 3 counting subgraphs" in looped


def test_markdown_report_names_the_default_loader_copies(machine: Machine) -> None:
    from ortdoctor.report.markdown import render as render_md

    env = machine_env(machine)
    plan = resolve(env, MATRIX)
    found = diagnose(env, plan, MATRIX, SMOKE_OK)
    text = render_md(Report(verdict=verdict_of(found), findings=tuple(found), env=env, plan=plan, matrix_path="<test>",
                            smoke=SMOKE_OK))
    assert "default loader: system 9.14.0" in text
    assert "needs preload" not in text
    assert "first run 57.7 ms" in text


def test_hidden_libraries_and_other_copies_are_one_warning_with_one_shell_line(machine: Machine) -> None:
    # cuDNN is in no directory the loader searches, and for CUDA the loader would take the toolkit's
    # copies: one cure (the preload), so one warning whose shell line covers both directories
    env = machine_env(machine)
    _plan, found, text = check(replace(env, system=replace(env.system, ldconfig={
        so: p for so, p in env.system.ldconfig.items() if "cudnn" not in so})))
    ids = [f.id for f in found]
    assert "default-loader-picks-other-copy" not in ids
    f = by_id(found, "cuda-lib-not-loadable")
    assert f.severity == "warning"
    assert "the dynamic loader maps other copies" in f.detail
    assert f.fix is not None
    (line,) = [x for x in f.fix.splitlines() if "LD_LIBRARY_PATH=" in x]
    assert str(machine.cudnn) in line
    assert str(machine.cu13) in line
    assert text.count("export LD_LIBRARY_PATH=") == 1


def test_shell_lines_never_carry_unsafe_ld_library_path_entries_along(machine: Machine) -> None:
    from ortdoctor.core.facts import SearchDir

    env = machine_env(machine, torch=None)
    unsafe = (SearchDir(path="", origin="LD_LIBRARY_PATH", exists=True, relative=False, note="empty entry"),
              SearchDir(path="/opt/keep", origin="LD_LIBRARY_PATH", exists=True, relative=False))
    env = replace(env, system=replace(env.system, ldconfig={}, cuda_home=None, ld_library_path=unsafe))
    _plan, found, _text = check(env)
    assert "ld-library-path-unsafe" in [f.id for f in found]
    fix = by_id(found, "cuda-lib-not-loadable").fix or ""
    (line,) = [x for x in fix.splitlines() if "LD_LIBRARY_PATH=" in x]
    assert "$LD_LIBRARY_PATH" not in line  # the current value holds the empty entry
    assert line.endswith(":/opt/keep")
