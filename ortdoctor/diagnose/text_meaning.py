"""What the observations of a text mean: finding ids with what happened, why, and the fix for its stack.

The observations (:mod:`.text_observe`) are read with everything the text showed: the build's CUDA and
cuDNN majors (ORT's ``Require`` line, a version the text names, looked up in the matrix), the binding and
OS (:mod:`.stack`), and the matrix's libraries and packages. A CUDA library of another major than the
build is a major mismatch; an old CUDA 11 soname asked for by the CUDA provider is an old build on a newer
CUDA; a fix speaks the stack's language (:mod:`.fixes`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ortdoctor.core.catalog import CATALOG as _CATALOG
from ortdoctor.core.facts import Match
from ortdoctor.core.finding_ids import FindingId
from ortdoctor.core.record import record, replace
from ortdoctor.core.shell import Command, render
from ortdoctor.decide import gpu_names, kernels, packages, tensorrt_versions
from ortdoctor.decide.fix_plan import driver_first
from ortdoctor.decide.fixes import DriverGate, driver_runs, step
from ortdoctor.decide.matrix.model import Matrix, line_key, parse_version
from ortdoctor.diagnose import fixes
from ortdoctor.diagnose.platforms import jetson_routes, wheel_platforms_text
from ortdoctor.diagnose.stack import Stack
from ortdoctor.diagnose.text_evidence import Evidence, TextEvidence
from ortdoctor.diagnose.text_observe import Hit, Scanner

__all__ = ["BY_CODE", "Context", "Decider", "with_evidence"]


@record
class Context:
    """What is known about the build the text came from (from the text itself or the environment)."""

    cuda_major: int | None = None
    cudnn_major: int | None = None
    ort_version: str | None = None


# --------------------------------------------------------------------------------------------------
# Decisions: what the observations mean, with everything the text showed
# --------------------------------------------------------------------------------------------------
_CUDNN_SO = re.compile(r"^libcudnn(?:_\w+)?\.so\.(\d+)")
_CUDNN_DLL = re.compile(r"^cudnn(?:_\w+?)?64_(\d+)\.dll$", re.IGNORECASE)
_CUDA_SO = re.compile(r"^lib(cudart|cublasLt|cublas|cufft|curand|cusparse|cusolver|nvrtc|nvJitLink)\.so\.(\d+)")
_CUDA_UNVERSIONED = re.compile(r"^lib(cudart|cublasLt|cublas|cufft|curand|cusparse|cusolver|nvrtc|nvJitLink)\.so$")
_CUDA_DLL = re.compile(r"^(cudart|cublasLt|cublas|cufft|curand|cusparse|cusolver|nvrtc|nvJitLink)64_(\d+)(?:_0)?\.dll$",
                       re.IGNORECASE)
_TRT_LIB = re.compile(r"^(?:lib)?(nvinfer\w*|nvonnxparser|nvparsers)(?:\.so|_\d+\.dll|\.dll)", re.IGNORECASE)
# the soname's own major is the CUDA major for these; cuFFT's is one below; cuRAND/cuSPARSE/cuSOLVER's say nothing
_SAME_MAJOR = ("cudart", "cublas", "cublaslt", "nvrtc", "nvjitlink")


def _py(stack: Stack, python: str, other: str) -> str:
    """Python's fix (a sentence) for a Python stack, the other one for another binding; both, Python's
    labelled, when the text does not show its binding."""
    if stack.python:
        return python
    if stack.known:
        return other
    return f"{other} Python: {python}"


def _py_extra(stack: Stack, sentence: str) -> str:
    """A Python-only sentence to append: as is for Python, labelled for an unknown binding, else nothing."""
    if stack.python:
        return " " + sentence
    return "" if stack.known else f" Python: {sentence}"


@record
class _Lib:
    """A CUDA or cuDNN library named in a text, and the majors it may belong to."""

    name: str
    family: str  # "cuda", "cudnn"
    component: str  # LibSpec name: "cublasLt", "cudnn", "cudnn_ops_infer"
    majors: frozenset[int]


def _identify(matrix: Matrix, name: str) -> _Lib | None:
    owners = packages.library_owners(matrix, name)
    if not owners and name.lower().endswith(".dll") and len(name) >= 8:
        # a DLL name whose start a code-page mix-up ate ("Lt64_12.dll"): the one known name ending so
        tail = name.lower()
        specs = [lib for c in matrix.cuda_majors.values() for lib in c.libraries]
        specs += [lib for d in matrix.cudnn_majors.values() for lib in d.libraries]
        full = {lib.windows_dll for lib in specs if lib.windows_dll and lib.windows_dll.lower().endswith(tail)}
        if len(full) == 1:
            name = full.pop() or name
            owners = packages.library_owners(matrix, name)
    if owners:
        fam = owners[0].family
        return _Lib(name, fam, owners[0].spec.name, frozenset(o.major for o in owners if o.family == fam))
    m = _CUDNN_SO.match(name) or _CUDNN_DLL.match(name)
    if m:
        return _Lib(name, "cudnn", "cudnn", frozenset({int(m.group(1))}))
    m = _CUDA_SO.match(name)
    if m:
        comp, so = m.group(1), int(m.group(2))
        if comp.lower() in _SAME_MAJOR:
            return _Lib(name, "cuda", comp, frozenset({so}))
        if comp == "cufft":
            return _Lib(name, "cuda", comp, frozenset({so + 1}))
        return _Lib(name, "cuda", comp, frozenset())
    m = _CUDA_UNVERSIONED.match(name)
    if m:  # "libnvrtc.so": cuDNN 8 opens some CUDA libraries by their development name, which no major names
        return _Lib(name, "cuda", m.group(1), frozenset())
    m = _CUDA_DLL.match(name)
    if m:
        ver = m.group(2)
        major = int(ver[:-1]) if len(ver) == 3 else int(ver[0]) if len(ver) == 2 and ver[0] in "6789" else int(ver)
        return _Lib(name, "cuda", m.group(1), frozenset({major}) if m.group(1).lower() in _SAME_MAJOR else frozenset())
    return None


class Decider:
    def __init__(self, scanner: Scanner, ctx: Context, matrix: Matrix | None) -> None:
        self.facts = scanner.facts
        self.hits = scanner.hits
        self.ev = scanner.evidence.evidence()
        self.stack = with_evidence(scanner.stack.stack(), self.ev)
        #: the evidence each decided finding used, by finding id (``explain --json`` prints it)
        self.used: dict[str, list[Evidence]] = {}
        #: the CUDA majors the fix being built names in prose (a build "for CUDA 12", a library set), in order
        self._naming: list[int] = []
        self.matrix = matrix
        req = self.facts.require
        version = ctx.ort_version or self.stack.ort_version
        line = packages.release_line(matrix, version) if matrix is not None else None
        # the CUDA/cuDNN majors the builds of the named onnxruntime version use (its PyPI wheel and its feeds)
        self.version_cuda: frozenset[int] = frozenset()
        self.version_cudnn: frozenset[int] = frozenset()
        #: (CUDA major, cuDNN major) of each build of that version (its PyPI wheel and its feeds)
        self.version_builds: tuple[tuple[int, int | None], ...] = ()
        if line is not None:
            # only the feed builds that exist for this version and ship a package for the text's binding (the
            # 1.17 CUDA 12 build had no Java package: a Java 1.17 program runs the CUDA 11 build)
            feeds = [f for f in line.feeds if f.ships(self.stack.binding)
                     and (not f.versions or version is None or version in f.versions)]
            self.version_builds = ((line.cuda_major, line.cudnn_major),
                                   *((f.cuda_major, f.cudnn_major) for f in feeds))
            self.version_cuda = frozenset({line.cuda_major, *(f.cuda_major for f in feeds)})
            self.version_cudnn = frozenset(m for m in (line.cudnn_major, *(f.cudnn_major for f in feeds))
                                           if m is not None)
        self.ctx = Context(
            cuda_major=ctx.cuda_major if ctx.cuda_major is not None else (req[1] if req else None),
            cudnn_major=ctx.cudnn_major if ctx.cudnn_major is not None else (req[0] if req else None),
            ort_version=version,
        )

    # -- helpers ------------------------------------------------------------------------------------
    def _summary(self) -> str:
        return fixes.build_summary(self.matrix) if self.matrix is not None else ""

    def _current(self) -> frozenset[int]:
        return packages.current_cuda_majors(self.matrix) if self.matrix is not None else frozenset({12, 13})

    def _libs_fix(self, lib: _Lib, major: int | None, *, what: str) -> str:
        for m in (major if lib.family != "cudnn" else self.ctx.cuda_major,):
            if m is not None:
                self._naming.append(m)
        if self.matrix is None:
            return fixes.system_libraries_fix(self.stack, what) + "."
        if lib.family == "cudnn":
            cuda = self.ctx.cuda_major
            return fixes.cuda_libraries_fix(self.matrix, self.stack, what=what, cuda_major=cuda,
                                            cudnn_major=major)
        # the CUDA provider links a set of CUDA libraries of one major: install the set, not the one wheel the
        # message named (the next missing library would be the next error)
        spec = self.matrix.cuda_majors.get(major) if major is not None else None
        components = tuple(dict.fromkeys([lib.component, *(s.name for s in spec.libraries)])) if spec else \
            (lib.component,)
        return fixes.cuda_libraries_fix(self.matrix, self.stack, what=what, cuda_major=major,
                                        components=components)

    def _ort_for(self, cuda_major: int) -> str:
        self._naming.append(cuda_major)
        if self.matrix is None:
            return f"use an onnxruntime build for CUDA {cuda_major}"
        return fixes.ort_for_cuda(self.matrix, self.stack, cuda_major)

    # -- one observation -> one match ------------------------------------------------------------
    def decide(self, hit: Hit) -> Match | None:
        builder = getattr(self, f"_b_{hit.kind}", None)
        if builder is None:
            return None
        self._naming = []
        found: Match | None = builder(hit)
        return self._for_driver(found) if found is not None else None

    # -- the driver the text shows, against the CUDA majors a fix names ------------------------------------
    def _driver(self) -> Evidence | None:
        """The driver version the text shows (None when none, or several: two machines)."""
        items = self.ev.about("driver.version")
        return items[0] if len({e.value for e in items}) == 1 else None

    def _driver_gate(self, majors: list[int], fix: str = "") -> DriverGate | None:
        """The fix's CUDA majors (named in prose, and brought by the package specs it prints) against the driver
        the text shows: the same check ``fix``'s plan makes of its steps (:func:`driver_first`)."""
        drv = self._driver()
        if drv is None or self.matrix is None:
            return None
        specs = fixes.pip_specs(fix)
        steps = [step("install", *specs)] if specs else []
        return driver_first(self.matrix, steps, drv.value, self.stack.os, cuda_majors=majors)

    def _runnable(self, majors: list[int]) -> list[int]:
        """Of ``majors`` (in order of preference), those the driver the text shows runs; all of them when the
        text shows no driver or the driver runs none (then updating it comes first, :meth:`_for_driver`)."""
        gate = self._driver_gate(majors)
        if gate is None or gate.none_runs:
            return majors
        return [m for m in majors if m in gate.runs]

    def _for_driver(self, match: Match) -> Match:
        """Never a fix the driver the text shows cannot run: when every CUDA major the fix names needs a newer
        driver, updating the driver to the floor of the build it recommends comes first, with the line that
        shows the driver; when only some do, the fix says which."""
        majors, self._naming = self._naming, []
        gate = self._driver_gate(majors, match.fix)
        drv = self._driver()
        if gate is None or drv is None:
            return match
        where = {"windows": "Windows", "linux": "Linux"}.get(gate.os_name, "Linux and Windows")
        used = self.used.setdefault(match.finding_id, [])
        if drv not in used:
            used.append(drv)
        shown = f"the text shows driver {drv.value} (line {drv.line_no}: {drv.line!r})"
        if gate.none_runs:
            major, floor = gate.floors[0]
            newest = (f" (it runs CUDA up to {gate.newest}: a build of CUDA {gate.newest} or older needs no update, "
                      "where the program has one)") if gate.newest else ""
            fix = (f"Update the NVIDIA driver to >= {floor} first: {shown}, and the CUDA {major} build this fix "
                   f"recommends needs >= {floor} ({where}); no build it names runs on that driver{newest}. "
                   f"Then: {match.fix}")
            details = {**match.details, "driver": drv.value, "driver_floor": floor}
            return replace(match, fix=fix, details=details)
        blocked = ", ".join(f"CUDA {m} needs >= {gate.floor(m)}" for m in gate.blocked)
        runs = " or ".join(f"CUDA {m}" for m in gate.runs)
        fix = (match.fix.rstrip() + f" The driver runs only the {runs} option: {shown}; {blocked} ({where}).")
        return replace(match, fix=fix, details={**match.details, "driver": drv.value})

    def _b_so_missing(self, hit: Hit) -> Match | None:
        return self._library(hit.subject, hit)

    def _b_dll_missing(self, hit: Hit) -> Match | None:
        dll = hit.subject
        low = dll.lower()
        if low == "zlibwapi.dll":
            return self._m("zlibwapi-missing", hit, f"{dll} could not be found: cuDNN 8 on Windows needs it and "
                           "does not ship it.")
        if low == "onnxruntime.dll":
            against = self._core_against_machine(hit, dll)
            if against is not None:
                return against
            return Match(
                "cuda-lib-missing",
                "onnxruntime.dll could not be loaded (the specified module could not be found).",
                "Windows reports the DLL itself when one of the DLLs it links cannot be found: the GPU build's "
                "onnxruntime.dll links the CUDA and cuDNN DLLs of its release, which are not on the DLL search "
                "path (or the native file was not copied to the output folder).",
                fixes.system_libraries_fix(self.stack, "the CUDA and cuDNN versions this onnxruntime release "
                                           "was built for") + ".",
                hit.evidence, {"dll": dll},
            )
        if _TRT_LIB.match(dll) or hit.data.get("requester") == "tensorrt":
            return self._trt_unavailable(hit, dll)  # TensorRT's DLLs (nvinfer_10.dll), or one the TensorRT EP needs
        lib = _identify(self.matrix, dll) if self.matrix is not None else None
        if lib is None:
            lib = _identify_without_matrix(dll)
        if lib is not None:
            return self._library(lib.name, hit, lib)
        return Match(
            "cuda-lib-missing",
            f"{dll} could not be found on the DLL search path.",
            "A DLL the CUDA provider (or one of its CUDA/cuDNN DLLs) imports is not on the search path.",
            fixes.system_libraries_fix(self.stack, "the CUDA and cuDNN versions the build needs") + ".",
            hit.evidence, {"dll": dll},
        )

    def _library(self, name: str, hit: Hit, lib: _Lib | None = None) -> Match | None:
        req = hit.data.get("requester", "")
        low = name.lower()
        if low in ("libcuda.so.1", "libnvidia-ml.so.1", "libnvidia-ml.so", "nvcuda.dll"):
            return self._driver_missing(name, hit)
        if low == "libcuda.so":
            return self._m(
                "wsl-libcuda-missing", hit, f"{name} (the unversioned name) could not be loaded.",
                fix="export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH (in WSL2 the driver's libcuda lives "
                    "there; install only the Windows NVIDIA driver). If ldconfig says /usr/lib/wsl/lib/libcuda.so.1 "
                    "is not a symbolic link, recreate libcuda.so.1 and libcuda.so there as links to libcuda.so.1.1 "
                    "and run sudo ldconfig. Outside WSL, check that the driver is installed (libcuda.so.1).",
                details={"soname": name})
        if low.startswith("libonnxruntime_providers_shared"):
            return self._b_shared_missing(hit)
        if low.startswith("libonnxruntime_providers_cuda") or low == "onnxruntime_providers_cuda.dll":
            return self._cpu_only(hit, "The CUDA provider library itself is missing from the onnxruntime package.")
        if _TRT_LIB.match(name) or req == "tensorrt":
            return self._trt_unavailable(hit, name)
        if lib is None and self.matrix is not None:
            lib = _identify(self.matrix, name)
        if lib is None:
            lib = _identify_without_matrix(name)
        if lib is None:
            if "onnxruntime" in hit.evidence.lower() and ("cuda" in low or low.startswith("libnv")):
                return Match("cuda-lib-missing", f"The library {name} could not be found by the dynamic loader.",
                             "A library the CUDA provider depends on is not installed or not on the loader path.",
                             fixes.system_libraries_fix(self.stack, f"the package that provides {name}") + ".",
                             hit.evidence, {"soname": name})
            return None
        if req == "genai":
            return self._sibling(lib, hit)
        if lib.family == "cudnn":
            return self._cudnn_library(lib, hit, req)
        return self._cuda_library(lib, hit, req)

    def _cudnn_library(self, lib: _Lib, hit: Hit, req: str) -> Match:
        have = min(lib.majors) if lib.majors else None
        build = self.ctx.cudnn_major
        if build is None and have is not None and self.version_cudnn and have not in self.version_cudnn:
            build = max(self.version_cudnn)
        installed = self.ev.majors("cudnn.version")
        details = {"soname": lib.name, "library": "cudnn"}
        if build is None and have is not None and len(installed) == 1 and have not in installed:
            # the text shows the cuDNN the machine has, and it is another major than the one asked for
            other = installed.pop()
            items = self._used("cudnn-major-mismatch", "cudnn.version", "ort.version")
            return Match(
                "cudnn-major-mismatch",
                f"{lib.name} (cuDNN {have}) was asked for, and the text shows cuDNN {other} installed.",
                "A build linked against one cuDNN major cannot use another (cuDNN 8 and 9 are not "
                f"interchangeable). Evidence: {self._cite(items)}.",
                f"Install cuDNN {have} (the build's), or an onnxruntime-gpu built for cuDNN {other}"
                + (f" ({self._summary()})" if self._summary() else "") + ".",
                hit.evidence, {**details, "cudnn_major": str(have), "installed_cudnn_major": str(other)},
            )
        if have is not None:
            details["cudnn_major"] = str(have)
        if have is not None and build is not None and have != build:
            return Match(
                "cudnn-major-mismatch",
                f"{lib.name} (cuDNN {have}) was asked for, but this onnxruntime build uses cuDNN {build}.",
                "A build linked against one cuDNN major cannot use another (cuDNN 8 and 9 are not "
                "interchangeable); the library asking for it was built for a different cuDNN.",
                "Install releases built for the same cuDNN major, or keep them in separate environments. "
                + self._summary() + ".",
                hit.evidence, details,
            )
        what = f"cuDNN {have}" if have is not None else "cuDNN"
        why = (f"The CUDA provider needs {what}. Either it is not installed, or it is installed where the loader "
               "does not look")
        if self.stack.python:
            why += (" (pip's nvidia-cudnn wheels put it in site-packages/nvidia/cudnn, which is never on the "
                    "loader path by itself)")
        why += "."
        if lib.name.lower().startswith(("cudnn_", "libcudnn_")):
            why += (f" {lib.name} is one of cuDNN {have}'s sub-libraries: the whole cuDNN must be installed, not "
                    "one DLL, and its folder must be on the search path (a path with '[ ]' in it breaks the lookup).")
        if req == "import":
            why += " This onnxruntime's native module links it directly, so `import onnxruntime` fails."
        fix = self._libs_fix(lib, have, what=f"{what}" + (f" for CUDA {self.ctx.cuda_major}" if self.ctx.cuda_major
                                                          else ""))
        if have is not None:
            fix += (f" If another cuDNN major is installed on purpose, install an onnxruntime-gpu built for it "
                    f"instead ({self._summary()}).") if self._summary() else ""
        return Match("cuda-lib-missing", f"cuDNN ({lib.name}) could not be found by the dynamic loader.", why, fix,
                     hit.evidence, details)

    def _cuda_library(self, lib: _Lib, hit: Hit, req: str) -> Match | None:
        details = {"soname": lib.name, "library": lib.component}
        lib_major = min(lib.majors) if len(lib.majors) == 1 else None
        if lib_major is not None:
            details["cuda_major"] = str(lib_major)
        if req == "import" and not hit.data.get("provider"):
            imported = self._import_needs(lib, hit)
            if imported is not None:
                return imported
        build = self.ctx.cuda_major
        if lib.majors and build is not None and build not in lib.majors:
            return self._major_mismatch(lib, hit, details, f"this onnxruntime build is for CUDA {build}",
                                        wanted=lib_major, have=build)
        machine = self.stack.machine_cuda_major
        if lib.majors and build is not None and machine is not None and machine != build:
            # the build asks for its own major's library (its Require line says which), and the text shows
            # another major installed: installing the library is one way, a build for the installed CUDA the other
            self._used("cuda-major-mismatch", "ort.cuda_major", "cuda.installed", "cuda.version", "cuda.major")
            return self._major_mismatch(lib, hit, details, f"this onnxruntime build is for CUDA {build} and the text "
                                        f"shows CUDA {machine} installed", wanted=build, have=machine)
        if lib.majors and build is None and self.version_cuda and not (lib.majors & self.version_cuda):
            builds = " or ".join(str(m) for m in sorted(self.version_cuda, reverse=True))
            return self._major_mismatch(lib, hit, details,
                                        f"onnxruntime {self.ctx.ort_version} is built for CUDA {builds}",
                                        wanted=lib_major, have=max(self.version_cuda))
        if lib.majors and build is None and machine is not None and machine not in lib.majors:
            return self._major_mismatch(lib, hit, details, f"the text shows CUDA {machine}", wanted=lib_major,
                                        have=machine)
        current = self._current()
        if (lib.majors and build is None and req == "provider" and current and machine is None
                and max(lib.majors) < min(current)):  # (a text showing that very CUDA installed contradicts it)
            return self._major_mismatch(
                lib, hit, details,
                f"CUDA {'/'.join(str(m) for m in sorted(lib.majors))} is older than what current onnxruntime-gpu "
                f"builds and NVIDIA's installers give (CUDA {'/'.join(str(m) for m in sorted(current))}), so this is "
                "an old onnxruntime-gpu build on a machine with a newer CUDA", wanted=max(lib.majors), have=None)
        era = ""
        if req == "import":
            era = (" This onnxruntime's native module links it directly (releases before the CUDA provider became "
                   "a separate library did), so `import onnxruntime` fails until it is there.")
        return Match(
            "cuda-lib-missing",
            f"The CUDA library {lib.name} could not be found by the dynamic loader.",
            "The CUDA provider links a fixed set of CUDA libraries of one major. This one is either not installed "
            "or installed where the loader does not look"
            + (" (pip's nvidia-* wheels live in site-packages/nvidia/*/lib, CUDA 13's in nvidia/cu13/lib, never on "
               "the loader path by themselves)" if self.stack.python else "")
            + ". A CUDA major different from the build's cannot stand in." + era,
            self._libs_fix(lib, lib_major, what=f"the CUDA {lib_major} libraries ({lib.name})" if lib_major
                           else f"the CUDA library {lib.name}")
            + (f" It is opened by its unversioned name: the CUDA toolkit's development package has {lib.name}; with "
               f"only a versioned {lib.name}.N installed, a symbolic link {lib.name} to it in the same directory "
               "serves." if lib.name.endswith(".so") else ""),
            hit.evidence, details,
        )

    def _import_needs(self, lib: _Lib, hit: Hit) -> Match | None:
        """`import onnxruntime` failed on a CUDA library: a release whose pybind module links CUDA."""
        if self.matrix is None:
            return None
        lines = [r for r in self.matrix.releases if lib.name in r.pybind_needed_cuda]
        if not lines:
            return None
        version = self.ctx.ort_version
        bad = [(r, kb) for r in lines for kb in r.known_bad]
        fid: FindingId
        if version is not None and not any(version.startswith(r.line + ".") or version == r.line for r in lines):
            fid = "ort-import-fails"
        elif bad and (version is None or any(kb.version == version for _, kb in bad)):
            fid = "ort-known-bad-release"
        else:
            fid = "ort-import-fails"
        releases = ", ".join(kb.version for _, kb in bad) or ", ".join(r.line for r in lines)
        fix = bad[0][1].fix if bad else f"install the CUDA runtime it needs ({lib.name})"
        return Match(
            fid,
            f"`import onnxruntime` itself failed: its native module needs {lib.name}, which cannot be loaded.",
            f"onnxruntime-gpu {releases}'s Linux pybind module has a direct dependency on {lib.name}, so the import "
            "fails on CPU-only hosts and hosts with another CUDA major, before any session exists"
            + (" (this looks like that release)." if fid == "ort-known-bad-release" else ".")
            + " Code that catches the ImportError often reports it as 'onnxruntime not installed'.",
            fix,
            hit.evidence, {"soname": lib.name},
        )

    def _major_mismatch(self, lib: _Lib, hit: Hit, details: dict[str, str], because: str, *,
                        wanted: int | None, have: int | None, what: str | None = None) -> Match:
        if what is None:
            what = f"{lib.name} (CUDA {wanted}) was asked for, but {because}." if wanted else \
                f"{lib.name} was asked for, but {because}."
        targets = [have] if have is not None else sorted(self._current(), reverse=True)
        parts = [self._ort_for(m) for m in targets]
        if wanted is not None:
            parts.append(fixes.system_libraries_fix(self.stack, f"the CUDA {wanted} libraries the build asks for "
                                                    "(with the cuDNN major it needs)").replace("Install", "or install",
                                                                                               1))
        fix = "Use one CUDA major for everything: " + "; ".join(p[0].lower() + p[1:] for p in parts) + "."
        summary = self._summary()
        if summary:
            fix += f" ({summary}.)"
        if self.stack.binding == "rust":
            fix += (" The ort crate's download-binaries fetch a build for one CUDA major: install that CUDA and its "
                    "cuDNN, or use load-dynamic with a build for your CUDA.")
        return Match(
            "cuda-major-mismatch", what,
            "CUDA's compatibility holds only within one major: libraries of one CUDA major cannot stand in for "
            "another's. The onnxruntime build (or another package in the process) was built for a different "
            "major than the CUDA that is installed.",
            fix, hit.evidence, details,
        )

    def _core_against_machine(self, hit: Hit, dll: str) -> Match | None:
        """The core library of a release that links CUDA into it (the GPU build's onnxruntime.dll) could not be
        loaded, and the text shows the machine's CUDA: a release built for another CUDA is the cause. Before CUDA
        11 a build needs its CUDA minor too (its DLLs carry it: cudart64_102.dll is not cudart64_101.dll)."""
        line = packages.release_line(self.matrix, self.ctx.ort_version) if self.matrix is not None else None
        have = sorted(set(self.ev.cuda_versions()))
        if line is None or len(have) != 1:
            return None
        build = _major_minor(line.cuda)
        machine = have[0]
        same = machine == build if build[0] < 11 else machine[0] in (self.version_cuda or {build[0]})
        if same:
            return None
        self._used("cuda-major-mismatch", "cuda.version")
        shown = f"{machine[0]}.{machine[1]}"
        return self._major_mismatch(
            _Lib(dll, "cuda", "", frozenset({build[0]})), hit, {"dll": dll}, "", wanted=build[0], have=machine[0],
            what=f"{dll} could not be loaded: onnxruntime {self.ctx.ort_version} is built for CUDA {line.cuda} "
                 f"(cuDNN {line.cudnn_major}), and the text shows CUDA {shown}. This release links the CUDA and "
                 "cuDNN DLLs of its build, so the DLL itself fails to load"
                 + (" (before CUDA 11 a build needs its CUDA minor: the DLL names carry it)." if build[0] < 11
                    else "."))

    def _sibling(self, lib: _Lib, hit: Hit) -> Match:
        major = min(lib.majors) if len(lib.majors) == 1 else None
        what = f"onnxruntime-genai's CUDA support needs {lib.name}" + (f" (CUDA {major})" if major else "") + \
            ", which cannot be loaded."
        return Match(
            "sibling-cuda-major-mismatch", what,
            "onnxruntime-genai (and other packages built on onnxruntime) ship their own CUDA-linked library, built "
            "for one CUDA major; when onnxruntime and genai were built for different CUDA majors (or the CUDA of "
            "genai's major is not installed) genai's CUDA interface cannot load.",
            "Install onnxruntime-gpu and onnxruntime-genai-cuda releases built for the same CUDA major"
            + (f" (genai here wants CUDA {major}, e.g. CUDA 12 and CUDA 13 builds do not mix)" if major else "")
            + ", or install the CUDA libraries genai asks for; keep them in separate environments if they must "
            "differ.",
            hit.evidence, {"soname": lib.name} | ({"cuda_major": str(major)} if major else {}),
        )

    def _driver_missing(self, name: str, hit: Hit) -> Match:
        wsl = self.stack.os == "wsl"
        return Match(
            "driver-missing",
            f"{name} could not be loaded: the NVIDIA driver's user-space library is not on this system.",
            "libcuda.so.1 (and libnvidia-ml.so.1) come with the NVIDIA driver, not with CUDA or pip wheels. It is "
            "missing when no driver is installed, on a machine without an NVIDIA GPU, or in a container started "
            "without GPU passthrough.",
            ("In WSL2 install only the Windows NVIDIA driver and export LD_LIBRARY_PATH=/usr/lib/wsl/lib. " if wsl
             else "")
            + "Install the NVIDIA driver (e.g. sudo apt-get install nvidia-driver-580); in Docker: docker run "
            "--gpus all ... with nvidia-container-toolkit on the host.",
            hit.evidence, {"soname": name},
        )

    def _cpu_only(self, hit: Hit, what: str) -> Match:
        stack = self.stack
        if stack.binding == "java":
            fix = ("Use the GPU artifact com.microsoft.onnxruntime:onnxruntime_gpu instead of onnxruntime (the CPU "
                   "jar has no CUDA provider); " + fixes.system_libraries_fix(stack, "the CUDA and cuDNN it was built "
                                                                             "for")[0].lower()
                   + fixes.system_libraries_fix(stack, "the CUDA and cuDNN it was built for")[1:] + ".")
        elif stack.binding == "csharp":
            if stack.genai:
                fix = ("Reference Microsoft.ML.OnnxRuntimeGenAI.Cuda instead of Microsoft.ML.OnnxRuntimeGenAI (the "
                       "plain package is built without CUDA), and install the CUDA and cuDNN it needs.")
            else:
                fix = ("Reference Microsoft.ML.OnnxRuntime.Gpu (and not also Microsoft.ML.OnnxRuntime): the CPU "
                       "package has no CUDA provider.")
        elif stack.binding == "rust":
            form = hit.data.get("form", "")
            if form == "dylib" or "ORT_DYLIB_PATH" in hit.evidence:
                fix = ("Point ORT_DYLIB_PATH (load-dynamic) at a GPU build of onnxruntime (the "
                       "onnxruntime-linux-x64-gpu / onnxruntime-win-x64-gpu release archives), not the CPU "
                       "onnxruntime-linux-x64 one; then install the CUDA and cuDNN it needs.")
            else:
                fix = ("Enable the ort crate's cuda feature so that download-binaries fetches a CUDA build of "
                       "onnxruntime (the default download has no CUDA provider), or use load-dynamic with "
                       "ORT_DYLIB_PATH pointing at a GPU build (onnxruntime-linux-x64-gpu).")
        elif stack.binding in ("cpp", "node"):
            fix = ("Use a GPU build of onnxruntime (the onnxruntime-linux-x64-gpu / onnxruntime-win-x64-gpu release "
                   "archives, or a source build with --use_cuda) and make sure that library is the one loaded.")
        elif hit.data.get("form") == "conda":
            def conda(*args: str) -> str:  # quoted for the shell the text shows (the variant spec has wildcards)
                return render(Command(("conda", *args)), windows=stack.windows)

            cuda = "onnxruntime=*=*cuda*"
            fix = ("conda-forge publishes onnxruntime per variant and the build string names it: install a CUDA "
                   f"variant where conda-forge has one for this platform (`{conda('search', '-c', 'conda-forge', cuda)}` "
                   f"lists them; `{conda('install', '-c', 'conda-forge', cuda)}`), or remove it "
                   f"(`{conda('remove', 'onnxruntime')}`) and install onnxruntime-gpu with this environment's own "
                   "Python: " + self._gpu_install() + ".")
        else:
            fix = _py(stack,
                      "python -m pip uninstall -y onnxruntime onnxruntime-gpu && " + self._gpu_install() + " "
                      "(a wheel built from source needs ./build.sh --use_cuda)",
                      "Use a GPU build of onnxruntime (the onnxruntime-gpu package, Microsoft.ML.OnnxRuntime.Gpu, "
                      "com.microsoft.onnxruntime:onnxruntime_gpu, or a source build with --use_cuda).")
        return Match(
            "ort-cpu-only", what,
            "The onnxruntime that was loaded has no CUDA execution provider: the CPU package (onnxruntime on PyPI, "
            "Microsoft.ML.OnnxRuntime, the onnxruntime jar, a CPU release archive, or a build without --use_cuda).",
            fix, hit.evidence, {},
        )

    def _b_cpu_only_list(self, hit: Hit) -> Match:
        facts = self.facts
        form = hit.data.get("form", "")
        both = facts.gpu_package_named and facts.cpu_package_named
        # the two PyPI package names are Python's own, so they decide for a text that shows no other binding
        if (self.stack.python and form == "list" and facts.repl) or (both and not (self.stack.known
                                                                                 and not self.stack.python)):
            return self._multiple(hit)
        what = {
            "warning": "CUDAExecutionProvider was asked for, but the imported onnxruntime does not offer it.",
            "list": "The imported onnxruntime lists no CUDA execution provider.",
            "missing": "The imported onnxruntime lists no CUDA execution provider.",
            "choices": "The program offers no CUDA execution provider: the imported onnxruntime has none.",
            "build": "The CUDA execution provider is not compiled into the onnxruntime that was loaded.",
            "dylib": "The onnxruntime library that was loaded is a CPU build.",
            "optimum": "Optimum asked for the CUDA execution provider, but the imported onnxruntime only offers the "
                       "CPU.",
            "conda": "conda installed onnxruntime's CPU build (its build string ends in _cpu), which has no CUDA "
                     "execution provider.",
        }.get(form, "The CUDA execution provider is not in the onnxruntime that was loaded.")
        return self._cpu_only(hit, what)

    def _multiple(self, hit: Hit) -> Match:
        if self.stack.binding == "csharp":
            fix = ("Reference only Microsoft.ML.OnnxRuntime.Gpu: remove the Microsoft.ML.OnnxRuntime (CPU) package "
                   "reference, whose onnxruntime.dll has no CUDA entry point.")
            why = ("Both the CPU and the GPU NuGet packages are referenced; they ship the same onnxruntime.dll and "
                   "the CPU one was copied to the output folder.")
        else:
            fix = ("python -m pip uninstall -y onnxruntime onnxruntime-gpu onnxruntime-directml onnxruntime-openvino && "
                   + self._gpu_install() + " (uninstalling only the CPU package leaves a broken "
                   "install: remove both, then install onnxruntime-gpu alone)")
            why = ("onnxruntime and onnxruntime-gpu (and -directml, -openvino) share one import package; the one "
                   "installed last overwrote the other's files, often through a transitive dependency, and the "
                   "CPU one's files leave only the CPU (and Azure) providers.")
        return Match("ort-multiple-packages",
                     "More than one onnxruntime distribution is installed, and the CPU one's files are the ones "
                     "loaded.", why, fix, hit.evidence, {})

    def _b_both_packages(self, hit: Hit) -> Match:
        return self._multiple(hit)

    def _b_provider_126(self, hit: Hit) -> Match:
        if any(k[0] == "shared_missing" for k in self.hits):
            # the providers' shared bridge is loaded before any provider library: its failure is the cause
            return self._b_shared_missing(hit)
        if hit.data.get("java_temp") or self.stack.binding == "java":
            return self._cpu_only(hit, "The Java binding could not load onnxruntime_providers_cuda.dll (error 126).")
        if self.facts.cuda_path_set:
            have = self.stack.machine_cuda_major
            lib = _Lib(hit.subject, "cuda", "", frozenset())
            return self._major_mismatch(
                lib, hit, {"dll": hit.subject}, "", wanted=None, have=have,
                what=f"{hit.subject} could not load a DLL it imports (error 126) although CUDA_PATH points at an "
                     "installed CUDA toolkit: that toolkit is most likely not the CUDA major this onnxruntime-gpu was "
                     "built for (or its cuDNN is missing).")
        stack = self.stack
        fix = fixes.system_libraries_fix(stack, "the CUDA and cuDNN versions this build was linked against")
        if stack.python or not stack.known:
            fix = _py(stack,
                      'python -m pip install "onnxruntime-gpu[cuda,cudnn]" and call onnxruntime.preload_dlls() (1.21+) or '
                      "`import ortdoctor.hook` before the session, or add the CUDA bin and cuDNN bin folders to "
                      "PATH and restart the shell; if torch is in the process, import torch first (its lib folder "
                      "carries CUDA/cuDNN DLLs that may be the ones that load); install the VC++ runtime "
                      "(https://aka.ms/vs/17/release/vc_redist.x64.exe).",
                      fix + ".")
        else:
            fix += "."
        return Match(
            "cuda-lib-missing",
            f"A DLL that {hit.subject} imports is missing (Windows error 126, ERROR_MOD_NOT_FOUND).",
            "The provider DLL is there; one of the CUDA/cuDNN DLLs it imports is not on the search path (PATH "
            "lookups are not recursive, the cuDNN 9 installer puts DLLs in bin\\<cuda version>, and "
            "os.add_dll_directory does not help ORT's own provider loading).",
            fix, hit.evidence, {"dll": hit.subject},
        )

    def _b_procedure_missing(self, hit: Hit) -> Match:
        subject = hit.subject
        fix = ("Align the CUDA/cuDNN versions so that one copy of each DLL is loaded: remove the older CUDA/cuDNN "
               "folder from PATH and put the proper cuDNN's bin folder first; check which copy is loaded (Process "
               "Monitor, or `where cudnn*.dll`).")
        fix += _py_extra(self.stack, "With torch in the process, import torch before onnxruntime and do not preload "
                         "a different cuDNN.")
        return Match(
            "lib-multiple-copies",
            "Windows could not find a procedure in a DLL (error 127): two incompatible versions of a CUDA/cuDNN DLL "
            "are mixed in the process" + (f" ({subject})." if subject else "."),
            "A process holds one DLL per name; an older CUDA/cuDNN on PATH (or torch/lib's cuDNN) was loaded first "
            "and lacks what the other library expects.",
            fix, hit.evidence, {"dll": subject} if subject else {},
        )

    def _b_procedure_import(self, hit: Hit) -> Match:
        version = self.ctx.ort_version
        if version is None or version.startswith("1.15.0"):
            return Match(
                "ort-known-bad-release",
                f"Importing {hit.subject} failed: a procedure one of its DLLs needs could not be found.",
                "onnxruntime 1.15.0's Windows wheel had exactly this fault on older Windows (Windows Server 2016, "
                "Windows 7); it was fixed in 1.15.1 (onnxruntime#15375). With another release, an older system DLL "
                "(msvcp140.dll) loaded first causes it.",
                'python -m pip install --upgrade "onnxruntime>=1.15.1" (or the same for onnxruntime-gpu); otherwise install '
                "the current Visual C++ redistributable (https://aka.ms/vs/17/release/vc_redist.x64.exe).",
                hit.evidence, {},
            )
        return self._b_msvc_missing(hit)

    def _b_dll_init_failed(self, hit: Hit) -> Match:
        module = hit.subject or "onnxruntime's native module"
        return Match(
            "dll-init-failed",
            f"Windows could not initialise {module} (a DLL initialization routine failed, WinError 1114).",
            "An older Visual C++ runtime (msvcp140.dll) was loaded first: conda's old vs2015_runtime in the "
            "environment, or a machine without the current redistributable (onnxruntime 1.21 raised the required "
            "version). Follow-up messages blaming CUDA libraries are guesses, not the cause.",
            ("In a conda environment: conda install conda-forge::vs2015_runtime. " if self.stack.conda else "")
            + "Install the current Visual C++ 2015-2022 redistributable "
            "(https://aka.ms/vs/17/release/vc_redist.x64.exe)"
            + ("" if self.stack.conda else "; in a conda environment: conda install conda-forge::vs2015_runtime")
            + "." + _py_extra(self.stack, 'If that is not possible, pin it: python -m pip install "onnxruntime<1.21".'),
            hit.evidence, {"module": hit.subject} if hit.subject else {},
        )

    def _b_msvc_missing(self, hit: Hit) -> Match:
        return Match(
            "msvc-runtime-missing",
            "Windows could not load onnxruntime's native module (a DLL it needs is missing).",
            "Usually the Visual C++ 2019+ runtime is missing, or an older msvcp140.dll (from conda or another "
            "package) is loaded first.",
            "Install https://aka.ms/vs/17/release/vc_redist.x64.exe, or update/remove conda's vc14_runtime / "
            "vs2015_runtime.",
            hit.evidence, {},
        )

    def _b_genai_dll_missing(self, hit: Hit) -> Match:
        return Match(
            "cuda-lib-missing",
            "onnxruntime-genai's native module could not be loaded: a DLL it needs (the CUDA runtime) was not found.",
            "Since Python 3.8, PATH is not searched for the DLLs of extension modules; onnxruntime-genai's CUDA "
            "package links cudart64_*.dll and looks for it through CUDA_PATH.",
            "Install the CUDA toolkit of genai's CUDA major and set CUDA_PATH to it (genai adds %CUDA_PATH%\\bin to "
            "the DLL directories), or call os.add_dll_directory() on the folder with cudart64_*.dll before the "
            "import.",
            hit.evidence, {},
        )

    def _b_native_import_failed(self, hit: Hit) -> Match:
        return Match(
            "cuda-lib-missing",
            "onnxruntime's native module could not be loaded (old releases only warned and then failed on this "
            "import).",
            "The warning before it names the cause: most often a CUDA or cuDNN library this onnxruntime-gpu release "
            "needs is missing (old releases linked them into the native module), or the VC++ runtime.",
            _py(self.stack,
                "Install the CUDA and cuDNN versions this onnxruntime-gpu release was built for (or an onnxruntime-gpu "
                "built for the installed CUDA), make them findable, and restart; `python -c \"import "
                "onnxruntime.capi.onnxruntime_pybind11_state\"` shows the real error.",
                "Install the CUDA and cuDNN versions this release was built for and make them findable."),
            hit.evidence, {},
        )

    def _b_install_damaged(self, hit: Hit) -> Match:
        return Match(
            "ort-install-damaged",
            f"The onnxruntime package has no {hit.subject}: its files are incomplete.",
            "Uninstalling one of two onnxruntime distributions (onnxruntime and onnxruntime-gpu share the "
            "onnxruntime/ package) deletes files the other one needs.",
            "python -m pip uninstall -y onnxruntime onnxruntime-gpu && python -m pip install --force-reinstall onnxruntime-gpu "
            "(reinstall the one you want after removing both).",
            hit.evidence, {},
        )

    def _b_shared_missing(self, hit: Hit) -> Match:
        return self._m("providers-shared-load-failed", hit,
                       "libonnxruntime_providers_shared (the bridge every shared execution provider needs) could not "
                       "be loaded.")

    # -- CUDA runtime errors -------------------------------------------------------------------------
    def _b_cuda_code(self, hit: Hit) -> Match | None:
        code = int(hit.subject)
        builder = BY_CODE.get(code)
        if builder is None:
            return None
        found = builder(self, hit)
        found.details.setdefault("cuda_error", str(code))
        return found

    def _b_cublas_status(self, hit: Hit) -> Match:
        status = hit.subject
        return Match(
            "cublas-status-error",
            f"cuBLAS failed with {status}"
            + (" while creating its handle (cublasCreate)." if "cublasCreate" in hit.evidence else "."),
            "CUBLAS_STATUS_ALLOC_FAILED at cublasCreate means cuBLAS could not allocate its workspace: the GPU's "
            "memory is taken (a small GPU, other processes, many sessions or threads), or a cuBLAS of another CUDA "
            "release was loaded in front of the one the build needs.",
            self._contested() or (
                "Free GPU memory: fewer concurrent sessions or execution threads, a smaller model or input, other GPU "
                "processes stopped (nvidia-smi lists them); and make sure the CUDA and cuDNN that get loaded are the "
                "versions the onnxruntime build supports (remove other CUDA/cuDNN folders from "
                + ("PATH)." if self.stack.windows else "PATH / LD_LIBRARY_PATH).") + self._undecided()),
            hit.evidence, {"status": status},
        )

    def _b_cudnn_status(self, hit: Hit) -> Match:
        status = hit.subject
        return Match(
            "cudnn-status-error",
            f"cuDNN failed with {status}"
            + (" while creating its handle (cudnnCreate)." if "cudnnCreate" in hit.evidence else "."),
            "At cudnnCreate it is resource exhaustion (a session per thread, too many sessions on one GPU); "
            "CUDNN_STATUS_NOT_SUPPORTED at a descriptor is a tensor too large for cuDNN (a batch too big); a "
            "cuDNN other than the build's can also cause it.",
            self._contested() or (
                "Reduce concurrent sessions and execution threads, lower the batch size or input size, and check "
                "that the cuDNN loaded is the one the onnxruntime build expects." + self._undecided()),
            hit.evidence, {"status": status},
        )

    def _b_cudnn_sublibrary(self, hit: Hit) -> Match:
        return self._sublibrary(hit, "cuDNN reports CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH: its sub-libraries "
                                "come from different cuDNN releases.")

    def _sublibrary(self, hit: Hit, what: str) -> Match:
        wheels = packages.cudnn_wheels(self.matrix, 9) if self.matrix is not None else {}
        names = " / ".join(wheels.values())
        fix = ("Keep one complete cuDNN: remove (or hide) the stray system cuDNN from the loader path, or reinstall "
               "the complete one; LD_DEBUG=libs shows where each libcudnn_* came from.")
        fix = _py(self.stack,
                  f"python -m pip install --force-reinstall {names} (the one matching the build's CUDA major), or remove the "
                  "stray system cuDNN from the loader path; LD_DEBUG=libs shows where each libcudnn_* came from."
                  if names else fix, fix)
        return Match(
            "cudnn-sublibrary-mismatch", what,
            "cuDNN 9 dlopens its sub-libraries (libcudnn_*.so.9) by bare name; when one is missing from the wheel "
            "or a partial copy, the loader takes a system copy of another version.",
            fix, hit.evidence, {},
        )

    def _b_link_time_reference(self, hit: Hit) -> Match:
        lib = hit.subject
        return Match(
            "lib-multiple-copies",
            f"A library was loaded next to a copy of its partner from another release ({lib}: symbol version not "
            "defined).",
            "Several CUDA installs each provide some libraries; the first match on the search path wins per soname, "
            "so cuBLAS and cuBLASLt (or cuDNN's pieces) came from different releases.",
            f"Find every copy of {lib} (ldconfig -p | grep {lib.split('.so')[0]}; conda envs, /usr/local/cuda*) and "
            "keep one source of CUDA libraries on LD_LIBRARY_PATH"
            + (";" + " `ortdoctor preload` loads one consistent set." if self.stack.python else "."),
            hit.evidence, {"soname": lib},
        )

    def _b_driver_library_mismatch(self, hit: Hit) -> Match:
        return Match(
            "driver-library-mismatch", "NVML reports a driver/library version mismatch.",
            "The user-space driver was upgraded but the kernel module still runs the old version; CUDA cannot "
            "initialise until they match.",
            "Reboot (or unload and reload the nvidia kernel modules).", hit.evidence, {},
        )

    def _b_arena_oom(self, hit: Hit) -> Match:
        size = re.search(r"size (\d+)", hit.evidence)
        return Match(
            "gpu-out-of-memory",
            "ORT's CUDA memory arena (BFCArena) could not allocate"
            + (f" {size.group(1)} bytes." if size else " a buffer."),
            "The GPU's memory is taken: other processes, several sessions or execution threads each keeping their "
            "own arena, an arena that grows in powers of two, or inputs larger than the GPU can hold.",
            "Use fewer execution threads and sessions per GPU, stop other GPU processes (nvidia-smi), cap the inputs "
            "(batch, sequence, image size), and limit the arena: ('CUDAExecutionProvider', {'arena_extend_strategy': "
            "'kSameAsRequested', 'gpu_mem_limit': N, 'cudnn_conv_use_max_workspace': '0'}).",
            hit.evidence, {},
        )

    def _b_cuda_graph_bug(self, hit: Hit) -> Match:
        return self._m("cuda-graph-ort-bug", hit, "CUDA graph capture or replay failed inside onnxruntime itself.")

    def _b_cuda_graph(self, hit: Hit) -> Match:
        return Match(
            "cuda-graph-unsupported", "The session cannot use CUDA graphs as requested (enable_cuda_graph).",
            "CUDA graphs need every node on the CUDA EP, no control flow (If/Loop/Scan), fixed shapes, and "
            "inputs/outputs bound through IOBinding at the same device addresses on every run.",
            "Bind inputs at fixed device addresses and update them in place; keep shapes fixed; fold shape "
            "subgraphs; avoid control flow"
            + "." + _py_extra(self.stack, "Use OrtValue.ortvalue_from_numpy(x, 'cuda', 0) and update_inplace()."),
            hit.evidence, {},
        )

    # -- providers -----------------------------------------------------------------------------------
    def _b_providers_not_set(self, hit: Hit) -> Match:
        return Match(
            "providers-not-set", "InferenceSession was created without providers= on a build with more than the CPU "
            "provider.",
            "Since ORT 1.9 a build with more than the CPU provider refuses to guess: the caller must list the "
            "providers.",
            "onnxruntime.InferenceSession(path, providers=['CUDAExecutionProvider', 'CPUExecutionProvider']) "
            "(['CPUExecutionProvider'] for the CPU), or the onnxruntime package the program was written for.",
            hit.evidence, {},
        )

    def _b_cpu_applied(self, hit: Hit) -> Match:
        return self._m("cpu-provider-only-applied", hit,
                       "Every session got only the CPU execution provider (insightface's 'Applied providers' line).",
                       consequence=True)

    def _b_nodes_not_assigned(self, hit: Hit) -> Match:
        return self._m("nodes-not-assigned-preferred-ep", hit,
                       "ORT placed some nodes on the CPU on purpose (a warning, not an error).", consequence=True)

    def _b_ep_not_created(self, hit: Hit) -> Match:
        req = self.facts.require
        doc = _CATALOG["cuda-ep-fell-back-to-cpu"]
        what = "The CUDA execution provider could not be created and ORT fell back to the CPU."
        if req:
            what += f" The build needs cuDNN {req[0]} and CUDA {req[1]}."
        summary = self._summary()
        fix = doc.fix + (f" Check that the build's CUDA major is the installed one ({summary})." if summary else "")
        if not self.stack.python and self.stack.known:
            fix = fix.replace("in code, check `session.get_providers()[0] == 'CUDAExecutionProvider'`",
                              "in code, check the session's providers")
        return Match("cuda-ep-fell-back-to-cpu", what, doc.cause, fix, hit.evidence,
                     {"cudnn_major": str(req[0]), "cuda_major": str(req[1])} if req else {}, True)

    _b_fell_back_to_cpu = _b_ep_not_created

    def _b_cuda_path_set(self, hit: Hit) -> Match:
        summary = self._summary()
        fix = ("Make the onnxruntime-gpu build and the CUDA/cuDNN on PATH match: install the CUDA major the build "
               "was linked against (e.g. CUDA 12.1 or any other 12.x for a CUDA 12 build) with its cuDNN, or "
               "install the onnxruntime-gpu built for your CUDA (for CUDA 12 outside 1.19-1.26 the onnxruntime-cuda-12 "
               "feed has builds)")
        if summary:
            fix += f" ({summary})"
        fix += ("; in a conda environment, conda-forge's cuda-runtime and cudnn packages install them into the "
                "environment; if both onnxruntime and onnxruntime-gpu are installed, uninstall onnxruntime and "
                "onnxruntime-gpu and install one: python -m pip uninstall -y onnxruntime onnxruntime-gpu && python -m pip install "
                '"onnxruntime-gpu[cuda,cudnn]".')
        return self._m("cuda-path-set-not-loaded", hit,
                       "onnxruntime could not load its CUDA provider although CUDA_PATH is set.", fix=fix)

    # -- TensorRT ------------------------------------------------------------------------------------
    def _b_trt_unavailable(self, hit: Hit) -> Match:
        return self._trt_unavailable(hit, hit.data.get("dll", ""))

    def _trt_unavailable(self, hit: Hit, lib: str) -> Match:
        need = tensorrt_versions.tensorrt_for(self.ctx.ort_version)
        fix = ("Leave TensorrtExecutionProvider out: providers=['CUDAExecutionProvider', 'CPUExecutionProvider'] "
               "(programs that pass get_available_providers() ask for it implicitly), or install the TensorRT the "
               "build needs" + (f" (TensorRT {need})" if need else "") + " and put its lib directory on "
               + ("PATH" if self.stack.windows else "LD_LIBRARY_PATH") + ".")
        fix += _py_extra(self.stack, "pip's tensorrt-cu12 / tensorrt-cu13 wheels keep it in "
                         "site-packages/tensorrt_libs.")
        return Match(
            "tensorrt-unavailable",
            "The TensorRT execution provider could not be created (TensorRT libraries are not loadable"
            + (f": {lib})." if lib else ")."),
            "onnxruntime-gpu lists TensorrtExecutionProvider first but never bundles TensorRT; code that asks for it "
            "fails and falls back, which buries any CUDA failure that follows.",
            fix, hit.evidence, {"soname": lib} if lib else {},
        )

    def _b_trt_part_missing(self, hit: Hit) -> Match:
        part = hit.subject
        m = re.search(r"_(\d{1,2})\.dll$|\.so\.(\d{1,2})", part)
        major = (m.group(1) or m.group(2)) if m else None
        whole = f"TensorRT {major}" if major else "TensorRT"
        fix = (f"Install {whole} whole, not some of its files: {part} ships beside nvinfer in the same release (the "
               "zip's lib folder, the installer, the tarball or the apt packages); copy or install all of it, and "
               "keep one TensorRT on the " + ("PATH" if self.stack.windows else "loader path") + ".")
        if self.stack.python:
            fix = _CATALOG["tensorrt-incomplete"].fix + ". " + fix
        return self._m("tensorrt-incomplete", hit,
                       f"TensorRT loaded, but could not open {part}, a part of {whole} it opens on demand (the builder "
                       "resource when it builds an engine): the TensorRT install is incomplete.", fix=fix,
                       details={"soname": part})

    def _b_trt_engine(self, hit: Hit) -> Match:
        need = tensorrt_versions.tensorrt_for(self.ctx.ort_version)
        table = (f"onnxruntime {self.ctx.ort_version}: TensorRT {need}" if need else tensorrt_versions.table_text())
        return self._m(
            "tensorrt-engine-incompatible", hit,
            "TensorRT refused a serialized engine: it was built by another TensorRT version (or for another GPU).",
            fix="Delete the serialized engine (the .engine/.trt file, the TensorRT EP's engine cache, an _ctx.onnx "
                "embed) and rebuild it with the TensorRT that will load it; keep one TensorRT on the loader path. "
                f"For the TensorRT EP that is the TensorRT its release was built with ({table}).")

    def _b_trt_create_failed(self, hit: Hit) -> Match:
        need = tensorrt_versions.tensorrt_for(self.ctx.ort_version)
        table = (f"onnxruntime {self.ctx.ort_version}: TensorRT {need}" if need else tensorrt_versions.table_text())
        return self._m(
            "tensorrt-ep-create-failed", hit,
            f"The TensorRT provider library loads against a different TensorRT ({hit.subject}: undefined symbol "
            f"{hit.data.get('symbol', '')}).",
            fix="Install the TensorRT version the onnxruntime release lists in its TensorRT EP requirements (or "
                f"rebuild onnxruntime against the installed one): {table}.",
            details={"soname": hit.subject})

    # -- models, Python packages, platform ----------------------------------------------------------
    def _b_op_no_kernel(self, hit: Hit) -> Match:
        where = hit.data.get("where")
        what = (f"No CUDA kernel is registered for {hit.subject} at this opset/type: the node runs on the CPU."
                if where else f"No kernel is registered for {hit.subject} with these input types.")
        fix = (f"The model's {hit.subject} needs a kernel this release does not register: re-export the model "
               "with an older opset, or re-quantize it with supported types (unsigned weights, the QDQ format), or "
               "use a release that registers the kernel; the verbose log (log_severity_level=0) lists the nodes "
               "placed on the CPU.")
        return self._m("op-kernel-missing", hit, what, fix=fix, details={"op": hit.subject})

    def _b_quantized_op_on_cpu(self, hit: Hit) -> Match:
        doc = _CATALOG["model-quantized-ops-on-cpu"]
        return Match("model-quantized-ops-on-cpu",
                     f"The CUDA EP has no kernel for the quantized operator {hit.subject}: it runs on the CPU.",
                     doc.cause, doc.fix, hit.evidence, {"op": hit.subject})

    def _b_numpy_abi(self, hit: Hit) -> Match:
        return self._m("numpy-abi-mismatch", hit,
                       "onnxruntime's native module was built against NumPy 1.x and NumPy 2 is installed.")

    def _b_glibcxx(self, hit: Hit) -> Match:
        return self._m("glibcxx-too-old", hit,
                       f"The system's C/C++ runtime is too old for onnxruntime's native library ({hit.subject} not "
                       "found).", details={"version": hit.subject})

    def _b_nvidia_stub(self, hit: Hit) -> Match:
        name = hit.subject
        real = name[: -len("-cu13")] if name.endswith("-cu13") else name
        return Match(
            "nvidia-wheel-stub", f"pip tried to install {name}, a deprecated stub package.",
            "From CUDA 13 NVIDIA's component wheels are unsuffixed (nvidia-cublas, nvidia-cuda-runtime); the -cu13 "
            "names are 0.0.1 stubs that refuse to build. Only cuDNN keeps its suffix.",
            f"Depend on {real} instead of {name}: python -m pip install {real}.",
            hit.evidence, {"package": name},
        )

    def _b_no_wheel(self, hit: Hit) -> Match:
        return self._m(
            "platform-no-cuda", hit, "pip found no onnxruntime wheel for this platform.",
            fix=self._no_wheel_fix())

    def _no_wheel_fix(self) -> str:
        """Where onnxruntime-gpu wheels exist, from the matrix's wheel platforms and Jetson routes."""
        source = ("build onnxruntime from source with --use_cuda (and --cmake_extra_defines "
                  "CMAKE_CUDA_ARCHITECTURES=<cc> for the GPU)")
        if self.matrix is None:
            return f"Use a platform PyPI has onnxruntime-gpu wheels for, or {source}."
        fix = (f"PyPI's onnxruntime-gpu has wheels for {wheel_platforms_text(self.matrix)}; check the platform, "
               f"the Python version and, on Linux, the glibc against them. Anywhere else, {source}.")
        if self.stack.known and not self.stack.python:
            return fix
        # Python's way after its label: a text that does not show its binding may be Java's or Rust's
        jetson = jetson_routes(self.matrix)
        return (fix + " Python: python -m pip debug --verbose lists the tags pip accepts"
                + (f"; on a Jetson (its GPU is in none of PyPI's wheels) install the JetPack build: {jetson}"
                   if jetson else "") + ".")

    def _b_cudnn_unavailable(self, hit: Hit) -> Match | None:
        major = self.ctx.cudnn_major or 9
        return self._library(f"libcudnn.so.{major}", hit)

    def _b_cudnn_init_dir(self, hit: Hit) -> Match | None:
        dirs = self.facts.cudnn_init_dirs
        if len(dirs) < 2:
            return None
        return self._sublibrary(hit, "cuDNN's sub-libraries were loaded from different directories: "
                                + ", ".join(f"{v} from {k}" for k, v in list(dirs.items())[:4]) + ".")

    def tensorrt_fell_back(self, hit: Hit) -> Match:
        """The TensorRT failure of a banner that retried with the CUDA provider the caller also asked for."""
        return self._m("tensorrt-ep-fell-back", hit,
                       "The TensorRT provider could not be created, and ORT retried the session with the CUDA "
                       "provider (which the caller also asked for).")

    # -- causes read from the text's evidence -----------------------------------------------------------
    def evidence_cause(self) -> Match | None:
        """:meth:`_evidence_cause`, its fix checked against the driver the text shows."""
        self._naming = []
        found = self._evidence_cause()
        return self._for_driver(found) if found is not None else None

    def _evidence_cause(self) -> Match | None:
        """The cause the text's evidence establishes against a status error or a bare fallback: a second
        onnxruntime, a GPU newer than the CUDA runtime or dropped by the installed cuDNN/CUDA, a build whose
        required cuDNN/CUDA major is not the one the text shows installed. None when the evidence is silent
        or agrees."""
        ev = self.ev
        first = next(iter(sorted(self.hits.values(), key=lambda h: h.order)), None)
        if first is None:
            # a text with no error line (a question, an issue form): a GPU/CUDA pair that cannot run fails
            # whatever the program does, so it is a cause. A build of another major than the issue form's
            # "CUDA/cuDNN version" is not: that field is often the host's toolkit, not what the program loads
            # (a program that ran on its own libraries, slowly for another reason, fills it in too)
            return self._gpu_cause(None)
        owners = list(dict.fromkeys(ev.ort_owners()))
        if len(owners) >= 2:
            return self._second_ort(first, owners)
        return self._gpu_cause(first) or self._build_cause(first)

    def _build_cause(self, first: Hit) -> Match | None:
        """A build whose required cuDNN/CUDA major is not the one the text shows installed (None when the
        evidence is silent or agrees)."""
        ev = self.ev
        runtime = ev.cuda_versions()
        build_cudnn, build_cuda = self.ctx.cudnn_major, self.ctx.cuda_major
        # without ORT's own Require line, the version the text names gives the build's majors when all its
        # builds (the PyPI wheel and the feeds) agree on one
        if build_cuda is None and len(self.version_cuda) == 1:
            build_cuda = next(iter(self.version_cuda))
        if build_cudnn is None and len(self.version_cudnn) == 1:
            build_cudnn = next(iter(self.version_cudnn))
        have_cudnn = ev.majors("cudnn.version")
        have_cuda = {m for m, _ in runtime}
        if build_cudnn is None and len(have_cuda) == 1 and build_cuda in (None, *have_cuda):
            # the version's builds disagree on cuDNN: the one in use is the build for the CUDA the machine has
            for_cuda = {dnn for cuda, dnn in self.version_builds if cuda in have_cuda and dnn is not None}
            if len(for_cuda) == 1:
                build_cudnn = for_cuda.pop()
        if build_cudnn is not None and len(have_cudnn) == 1 and build_cudnn not in have_cudnn:
            return self._build_needs(first, "cudnn", build_cudnn, have_cudnn.pop())
        if build_cuda is not None and len(have_cuda) == 1 and build_cuda not in have_cuda:
            return self._build_needs(first, "cuda", build_cuda, have_cuda.pop())
        return None

    def _gpu_cause(self, first: Hit | None) -> Match | None:
        """A GPU the text's CUDA or cuDNN cannot run: newer than the CUDA runtime, or a generation the library
        dropped. Such a pair fails whatever else the text says, so it is a cause even in a text that quotes no
        error line (``first`` is None then)."""
        sm = self.ev.sm()
        runtime = self.ev.cuda_versions()
        if sm is None:
            sm = self._only_gpu_too_new(runtime)
        if sm is None:
            return None
        need = _FIRST_CUDA.get(sm)
        hit = first or Hit("evidence", "", "", -1)
        if need is not None and runtime and all(v < need for v in runtime):
            return self._runtime_older(hit, sm, need, max(runtime))
        dropped = self._dropped(sm)
        if dropped is not None:
            return self._gpu_dropped(hit, sm, *dropped)
        return None

    def _only_gpu_too_new(self, runtime: list[tuple[int, int]]) -> int | None:
        """Of several GPUs in the text ("works on the GTX 1050 Ti, fails on the RTX 2070"), the one GPU that every
        CUDA runtime the text shows is older than: whatever else differs, that GPU cannot run (None when none or
        several are)."""
        sms = self.ev.sms()
        too_new = [sm for sm in sms if runtime and (need := _FIRST_CUDA.get(sm)) is not None
                   and all(v < need for v in runtime)]
        return too_new[0] if len(sms) > 1 and len(too_new) == 1 else None

    def _evidenced_cuda(self) -> int | None:
        """The CUDA major the text shows the build or the machine on (None when it shows none, or several)."""
        if self.ctx.cuda_major is not None:
            return self.ctx.cuda_major
        majors = {m for m, _ in self.ev.cuda_versions()}
        return majors.pop() if len(majors) == 1 else self.stack.machine_cuda_major

    def _gpu_install(self) -> str:
        """The pip command for onnxruntime-gpu on the text's stack: built for the CUDA major the text shows,
        with a wheel for its Python; the default wheel (and its CUDA) only when the text shows no CUDA."""
        default = 'python -m pip install "onnxruntime-gpu[cuda,cudnn]"'
        major = self._evidenced_cuda()
        if major is None or self.matrix is None or major not in self._current():
            return default
        gpu = divmod(self.stack.gpu_sm, 10) if self.stack.gpu_sm else None
        rec = self.matrix.recommend(str(major), None, python=self.stack.python_version, gpu=gpu,
                                    platform="win_amd64" if self.stack.windows else "linux_x86_64")
        return ("python -m " + rec.command if rec.command.startswith("pip ") else rec.command) if rec is not None \
            else default

    def _contested(self) -> str:
        """For a status error whose text shows a GPU and several CUDA versions, only some of them older than the
        GPU: which of them the program runs on decides (the other is often the host's or the driver's). Memory
        advice is not printed against that evidence."""
        sm = self.ev.sm()
        need = _FIRST_CUDA.get(sm) if sm is not None else None
        runtime = sorted(set(self.ev.cuda_versions()))
        older = [v for v in runtime if need is not None and v < need]
        if not older or len(older) == len(runtime) or need is None:
            return ""
        self._used("cuda-runtime-older-than-gpu", "gpu.name", "gpu.compute_capability", "cuda.version")
        shown = ", ".join(f"{a}.{b}" for a, b in runtime)
        return (f"The text shows the GPU (sm_{sm}) and CUDA {shown}; the GPU needs CUDA {need[0]}.{need[1]} or newer. "
                f"If the program's own CUDA runtime (its onnxruntime, PyTorch or container build) is "
                f"{' or '.join(f'{a}.{b}' for a, b in older)}, that is the cause: use builds of CUDA {need[0]}.{need[1]} "
                "or newer, all of one CUDA major. `ortdoctor check` reads which CUDA runtime the program loads.")

    def _undecided(self) -> str:
        """For a status error the evidence did not explain: which evidence would tell its causes apart."""
        missing = [what for fact, what in (("gpu.compute_capability", "the GPU and its compute capability"),
                                           ("cuda.version", "the CUDA runtime version"),
                                           ("cudnn.version", "the cuDNN version"))
                   if not self.ev.values(fact)]
        if not missing:
            return ""
        return (" The text does not show " + ", ".join(missing) + ", which tell the other causes of the same "
                "status apart: a GPU newer than the CUDA runtime, a GPU generation the installed cuDNN dropped "
                "(cuDNN 9.11 and later support no Maxwell or Pascal GPU), a second onnxruntime in the process; "
                "`ortdoctor check` reads them.")

    def _used(self, fid: FindingId, *facts: str) -> list[Evidence]:
        items = self.ev.about(*facts)
        self.used[fid] = items
        return items

    @staticmethod
    def _cite(items: list[Evidence]) -> str:
        return "; ".join(f"{e.fact} {e.value} (line {e.line_no})" for e in items[:6])

    def _dropped(self, sm: int) -> tuple[str, str | None] | None:
        """What dropped this GPU generation, from the versions in the text, and the fix when it is not the
        catalog's (None when nothing did)."""
        cudnn = [tuple(int(x) for x in v.split(".")[:2]) for v in self.ev.values("cudnn.version") if "." in v]
        if sm < _CUDNN_DROP_BELOW and any(v >= _CUDNN_DROP_FROM for v in cudnn):
            return f"cuDNN {'.'.join(map(str, max(cudnn)))} (cuDNN 9.11 and later support no GPU older than Volta)", None
        trt = self._tensorrt_drop(sm)
        if trt is not None:
            return trt
        shown = {m for m, _ in self.ev.cuda_versions()} | self.ev.majors("cuda.major")
        if self.ctx.cuda_major is not None:
            shown.add(self.ctx.cuda_major)
        for major in sorted(shown, reverse=True):  # every CUDA major's oldest GPU, from the one kernel table
            floor = kernels.CUDA_FLOOR.get(major)
            if floor is not None and sm < floor[0] * 10 + floor[1]:
                return (f"CUDA {major} (it builds nothing below sm_{floor[0]}{floor[1]}"
                        + (": no Maxwell, Pascal or Volta)" if major == 13 else ": no Kepler)" if major == 12 else ")"),
                        None)
        return None

    def _majors_with_kernels(self, sm: int) -> list[int]:
        """The current CUDA majors whose builds still carry kernels for this GPU, newest first."""
        return [m for m in sorted(self._current(), reverse=True) if kernels.CUDA_FLOOR.get(m, (0, 0)) <= divmod(sm, 10)]

    def _tensorrt_drop(self, sm: int) -> tuple[str, str] | None:
        """(what dropped the GPU, the fix) when a TensorRT version the text shows supports no GPU this old
        (the matrix's ``tensorrt.gpu_floors``); the fix names the newest onnxruntime-gpu whose TensorRT EP was
        built with a TensorRT that still supports it."""
        facts = self.matrix.tensorrt if self.matrix is not None else None
        if facts is None:
            return None
        for value in self.ev.values("tensorrt.version"):
            floor = facts.gpu_floor(_major_minor(value))
            if floor is None or sm >= floor.sm:
                continue
            cuda = self._majors_with_kernels(sm)
            keeps = next((b for b in sorted(facts.builds, key=lambda b: _major_minor(b.lines[-1]), reverse=True)
                          if (f := facts.gpu_floor(_major_minor(b.tensorrt))) is None or sm >= f.sm), None)
            fix = (f"Use a TensorRT older than {floor.since} on this GPU"
                   + (f": for the TensorRT provider, onnxruntime-gpu {keeps.lines[-1]} with TensorRT {keeps.tensorrt}, "
                      "the TensorRT its provider was built with" if keeps is not None else "")
                   + "; or leave TensorRT out and run the model on the CUDA provider"
                   + (f" (a CUDA {cuda[0]} build still has kernels for it)" if cuda else "")
                   + f", or move to a GPU of compute capability {floor.sm // 10}.{floor.sm % 10} or newer.")
            return (f"TensorRT {value} (TensorRT {floor.since} and later support no GPU below sm_{floor.sm})", fix)
        return None

    def _second_ort(self, hit: Hit, owners: list[str]) -> Match:
        items = self._used("ort-multiple-packages", "ort.copies")
        others = [o for o in owners if o != "onnxruntime"]
        fix = (f"Remove the second ONNX Runtime: the one bundled by {', '.join(others)} (uninstall that package, or "
               "use its variant that depends on onnxruntime-gpu instead of bundling its own), so that one "
               "onnxruntime-gpu is loaded.")
        return Match("ort-multiple-packages",
                     f"Two ONNX Runtime copies are in this process: {', '.join(owners)} each carry onnxruntime/capi.",
                     "Two onnxruntime builds in one process share symbol names and provider libraries; the one "
                     "loaded first wins, and the other's CUDA provider fails with errors that name memory or the "
                     "driver. Evidence: " + self._cite(items) + ".",
                     fix, items[0].line if items else hit.evidence, {"copies": ", ".join(owners)})

    def _runtime_older(self, hit: Hit, sm: int, need: tuple[int, int], have: tuple[int, int]) -> Match:
        items = self._used("cuda-runtime-older-than-gpu", "gpu.name", "gpu.compute_capability", "cuda.version",
                           "driver.cuda")
        doc = _CATALOG["cuda-runtime-older-than-gpu"]
        # the oldest current CUDA major that knows the GPU: a newer major asks more of the driver than needed
        # and of those, one the driver the text shows runs (when it runs any)
        fit = self._runnable(sorted(m for m in self._current() if m >= need[0]))
        major = fit[0] if fit else max(self._current())
        fix = ("Use CUDA libraries, cuDNN and an onnxruntime build of CUDA "
               f"{need[0]}.{need[1]} or newer, all of one CUDA major: {self._ort_for(major)}. "
               + (self._libs_set(major) + " " if self._libs_set(major) else "")
               + "`ortdoctor check` reads which libraries load.")
        return Match("cuda-runtime-older-than-gpu",
                     f"The GPU (sm_{sm}) needs CUDA {need[0]}.{need[1]} or newer; the text shows CUDA "
                     f"{have[0]}.{have[1]}.",
                     doc.cause + " Evidence: " + self._cite(items) + ".", fix,
                     items[0].line if items else hit.evidence, {"sm": f"sm_{sm}", "needs_cuda": f"{need[0]}.{need[1]}"})

    def _gpu_dropped(self, hit: Hit, sm: int, by: str, own_fix: str | None) -> Match:
        items = self._used("gpu-dropped-by-library", "gpu.name", "gpu.compute_capability", "cudnn.version",
                           "cuda.version", "cuda.major", *(("tensorrt.version",) if own_fix is not None else ()))
        doc = _CATALOG["gpu-dropped-by-library"]
        fix = doc.fix
        if own_fix is not None:  # TensorRT's drop: its fix names the release to stay on
            return Match("gpu-dropped-by-library", f"The GPU (sm_{sm}) is not supported by {by}.",
                         doc.cause + " Evidence: " + self._cite(items) + ".", own_fix,
                         items[0].line if items else hit.evidence, {"sm": f"sm_{sm}"})
        # the fix sends the GPU to the newest current CUDA major that still builds for it: that major's driver
        # floor is checked against a driver the text shows (_for_driver)
        self._naming += self._majors_with_kernels(sm)[:1]
        if "cuDNN" in by and self.stack.python and self.matrix is not None:
            wheel = packages.cudnn_wheel(self.matrix, 9, 12)
            if wheel:
                fix += f' With pip: python -m pip install "{wheel}<9.11" (the last cuDNN for this GPU).'
        return Match("gpu-dropped-by-library", f"The GPU (sm_{sm}) is not supported by {by}.",
                     doc.cause + " Evidence: " + self._cite(items) + ".", fix,
                     items[0].line if items else hit.evidence, {"sm": f"sm_{sm}"})

    def _build_needs(self, hit: Hit, family: str, build: int, have: int) -> Match:
        fid: FindingId = "cudnn-major-mismatch" if family == "cudnn" else "cuda-major-mismatch"
        items = self._used(fid, "ort.cudnn_major", "ort.cuda_major", "ort.version",
                           "cudnn.version" if family == "cudnn" else "cuda.version")
        name = "cuDNN" if family == "cudnn" else "CUDA"
        if family == "cuda":
            fix = (f"Use one CUDA major for everything: {self._ort_for(have)}"
                   if have in self._current() or self.matrix is None else
                   f"Install the CUDA {build} libraries the build needs")
            fix += f"; or install the whole CUDA {build} library set the build asks for"
            fix += (": " + self._libs_set(build) if self._libs_set(build) else "") + "."
        else:
            fix = (f"Install cuDNN {build} (the build's), or an onnxruntime-gpu built for cuDNN {have}"
                   + (f" ({self._summary()})" if self._summary() else "")
                   + ("; on a Jetson, the Jetson Zoo wheel for your JetPack or a source build against its cuDNN"
                      if self.ev.values("env.jetson") else "") + ".")
        return Match(fid, f"This onnxruntime build requires {name} {build}, and the text shows {name} {have} "
                          "installed.",
                     ("ORT's own line states the build's requirement (Require cuDNN N.* and CUDA M.*)"
                      if self.facts.require else
                      f"onnxruntime {self.ctx.ort_version}'s builds are for {name} {build}")
                     + f"; a {name} of another major cannot stand in. Evidence: " + self._cite(items) + ".",
                     fix, hit.evidence if not items else items[0].line,
                     {f"{family}_major": str(build), f"installed_{family}_major": str(have)})

    def _libs_set(self, cuda_major: int) -> str:
        """The whole library set of one CUDA major, for a Python stack: the wheels of every component the
        CUDA provider links (not one of them)."""
        self._naming.append(cuda_major)
        if self.matrix is None or not self.stack.python:
            return ""
        spec = self.matrix.cuda_majors.get(cuda_major)
        if spec is None:
            return ""
        wheels = [w for w in dict.fromkeys(packages.wheel_for(self.matrix, lib.name, cuda_major)
                                           for lib in spec.libraries) if w]
        cudnn = packages.cudnn_wheel(self.matrix, 9, cuda_major)
        if cudnn:
            wheels.append(f'"{cudnn}==9.*"')
        return ("python -m pip install " + " ".join(wheels)) if wheels else ""

    def _b_container_driver(self, hit: Hit) -> Match:
        """An NVIDIA container image that needs a newer host driver than the one it found."""
        need = hit.subject
        drv = self._driver()
        self._used("driver-too-old", "driver.version", "driver.cuda")
        have = f"; the host has {drv.value}" if drv is not None else ""
        return Match(
            "driver-too-old",
            f"The container image needs NVIDIA driver {need} or newer{have}, and its forward compatibility "
            "(the image's cuda-compat libraries) is not available on this GPU or driver.",
            "An NVIDIA image's CUDA needs the host driver of its CUDA release; the image checks it at start. Forward "
            "compatibility, which would let an older driver run it, works only on data-centre GPUs with a supported "
            "driver branch.",
            f"Update the host's NVIDIA driver to {need} or newer (the container uses the host's driver), or run an "
            "image built for the CUDA the host driver supports (nvidia-smi's \"CUDA Version\" is the highest it runs)"
            + (f". {self._summary()}." if self._summary() else "."),
            hit.evidence, {"needs_driver": need} | ({"driver": drv.value} if drv is not None else {}))

    def _b_container_gpu(self, hit: Hit) -> Match:
        """An NVIDIA container image older than the GPU: its CUDA and libraries do not know the GPU yet."""
        sm = self.ev.sm()
        need = _FIRST_CUDA.get(sm) if sm is not None else None
        self._used("cuda-runtime-older-than-gpu", "gpu.name", "gpu.compute_capability", "cuda.version",
                   "tensorrt.version")
        return Match(
            "cuda-runtime-older-than-gpu",
            f"The container image predates the GPU ({hit.subject}): its release does not support it yet.",
            "An NVIDIA container release supports the GPUs its CUDA, cuDNN and TensorRT know; a GPU newer than the "
            "release is refused at start (or runs without kernels for it).",
            "Use a newer release of the image, one whose CUDA knows the GPU"
            + (f" (CUDA {need[0]}.{need[1]} or newer for sm_{sm})" if need is not None and sm is not None else "")
            + ", with the onnxruntime-gpu build for that CUDA major; the release notes of the image list the GPUs "
            "each release supports.",
            hit.evidence, {"gpu": hit.subject} | ({"sm": f"sm_{sm}"} if sm is not None else {}))

    def _b_torch_arch(self, hit: Hit) -> Match:
        """PyTorch's check of the GPU against its build's architectures: a GPU newer than all of them needs a
        build of a newer CUDA; one older than all of them was dropped by the build; one between them is missing."""
        sm = int(hit.subject)
        archs = sorted({int(k[1]) for k in self.hits if k[0] == "torch_archs"})
        listed = " ".join(f"sm_{a}" for a in archs)
        need = _FIRST_CUDA.get(sm)
        have = max(self.ev.cuda_versions(), default=None)
        if need is not None and ((archs and sm > archs[-1] and (have is None or have < need))
                                 or (not archs and have is not None and have < need)):
            # the GPU is newer than the build: its list ends below it, or the text's CUDA predates it
            items = self._used("cuda-runtime-older-than-gpu", "gpu.name", "gpu.compute_capability", "cuda.version")
            major = min((m for m in self._current() if m >= need[0]), default=max(self._current()))
            fix = (f"Install a PyTorch build of CUDA {need[0]}.{need[1]} or newer (its index URL names the CUDA, "
                   f"e.g. cu{need[0]}{need[1]}); for onnxruntime on the same GPU, the same CUDA major: "
                   f"{self._ort_for(major)}.")
            return Match("cuda-runtime-older-than-gpu",
                         f"The GPU (sm_{sm}) is newer than the PyTorch build: it needs CUDA {need[0]}.{need[1]} "
                         "or newer" + (f"; the build carries {listed}" if archs else "") + ".",
                         _CATALOG["cuda-runtime-older-than-gpu"].cause + " Evidence: " + self._cite(items) + ".",
                         fix, hit.evidence, {"sm": f"sm_{sm}", "needs_cuda": f"{need[0]}.{need[1]}"})
        if archs and sm < archs[0]:
            cuda = self._majors_with_kernels(sm)
            self._used("gpu-dropped-by-library", "gpu.name", "gpu.compute_capability", "cuda.version")
            return Match("gpu-dropped-by-library",
                         f"The GPU (sm_{sm}) is not supported by this PyTorch build: its kernels start at sm_{archs[0]}.",
                         _CATALOG["gpu-dropped-by-library"].cause,
                         f"Install a PyTorch build whose architecture list includes sm_{sm}: the same torch release "
                         "from an older CUDA index (the message names one), or an older release"
                         + (f"; for onnxruntime on this GPU, a CUDA {cuda[0]} build: {self._ort_for(cuda[0])}"
                            if cuda else "") + ".",
                         hit.evidence, {"sm": f"sm_{sm}"})
        self._used("gpu-arch-unsupported", "gpu.name", "gpu.compute_capability", "cuda.version")
        return Match("gpu-arch-unsupported",
                     f"The PyTorch build has no kernels for the GPU (sm_{sm})"
                     + (f"; it carries {listed}" if archs else "") + ".",
                     _CATALOG["gpu-arch-unsupported"].cause,
                     f"Install a PyTorch build whose architecture list includes sm_{sm} (another CUDA index or "
                     f"release), or build it with TORCH_CUDA_ARCH_LIST including {sm // 10}.{sm % 10}; a build "
                     "without kernels for the GPU cannot run on it.",
                     hit.evidence, {"sm": f"sm_{sm}"})

    def _b_trt_build(self, hit: Hit) -> Match:
        subjects = {k[1] for k in self.hits if k[0] == "trt_build"}
        why = ("the GPU ran out of memory while TensorRT timed its tactics" if "memory" in subjects else
               "TensorRT's allocator ran out of GPU memory" if "allocator" in subjects else
               "the TensorRT version does not support this GPU (Unsupported SM)" if "sm" in subjects else
               "the workspace limit left no tactic for a layer" if "workspace" in subjects else
               "the text does not say why (TensorRT's own log lines before it would: memory, workspace, SM)")
        what = ("TensorRT's allocator ran out of GPU memory, building an engine or loading one."
                if subjects == {"allocator"} else f"TensorRT could not build an engine: {why}.")
        return self._m("tensorrt-engine-build-failed", hit, what, details={"reason": ",".join(sorted(subjects))})

    # -- a match documented by the catalog ----------------------------------------------------------
    def _m(self, fid: FindingId, hit: Hit, what: str, *, fix: str | None = None, details: dict[str, str] | None = None,
           consequence: bool = False) -> Match:
        doc = _CATALOG[fid]
        return Match(fid, what, doc.cause, fix if fix is not None else doc.fix, hit.evidence, dict(details or {}),
                     consequence)


# The CUDA release that first knows each GPU generation (CUDA toolkit release notes): a runtime older than
# this has no cuBLAS/cuDNN/onnxruntime kernels for it, whatever the driver.
_FIRST_CUDA: dict[int, tuple[int, int]] = {
    60: (8, 0), 61: (8, 0), 62: (8, 0), 70: (9, 0), 72: (10, 0), 75: (10, 0), 80: (11, 0), 86: (11, 1), 87: (11, 4), 89: (11, 8), 90: (11, 8), 100: (12, 8), 101: (12, 8), 120: (12, 8),
    121: (12, 9), 103: (12, 9),
}
# cuDNN 9.11 dropped Maxwell and Pascal (its support matrix; https://github.com/immich-app/immich/pull/23110).
_CUDNN_DROP_FROM = (9, 11)
_CUDNN_DROP_BELOW = 70


def _major_minor(version: str) -> tuple[int, int]:
    """``(10, 2)`` for "10.2.0.19" or "10.2"; ``(0, 0)`` for what is no version."""
    parsed = parse_version(version)
    return line_key(parsed) if parsed is not None else (0, 0)


def with_evidence(stack: Stack, ev: TextEvidence) -> Stack:
    """The stack with what the evidence adds for the fixes: the Python version and the GPU."""
    sm = ev.sm()
    # the CUDA the machine has is read once, by the evidence (which knows nvidia-smi's "CUDA Version" is the
    # driver's, not an installed one); a text that shows two majors shows none for sure
    majors = {m for m, _ in ev.cuda_versions()} or ev.majors("cuda.major")
    if len(majors) > 1 and len(said := ev.majors("cuda.installed")) == 1 and said <= majors:
        majors = said  # of several, the one the person says the machine has
    return replace(stack, python_version=ev.python(), gpu_sm=sm,
                   machine_cuda_major=majors.pop() if len(majors) == 1 else None)


def _identify_without_matrix(name: str) -> _Lib | None:
    m = _CUDNN_SO.match(name) or _CUDNN_DLL.match(name)
    if m:
        return _Lib(name, "cudnn", "cudnn", frozenset({int(m.group(1))}))
    m = _CUDA_SO.match(name)
    if m:
        comp, so = m.group(1), int(m.group(2))
        majors = {so} if comp.lower() in _SAME_MAJOR else {so + 1} if comp == "cufft" else set()
        return _Lib(name, "cuda", comp, frozenset(majors))
    return None


# CUDA runtime error codes (cudaError_t) and what they stand for.
def _code_simple(fid: FindingId, what: str, why: str, fix: str) -> Callable[[Decider, Hit], Match]:
    def build(d: Decider, hit: Hit) -> Match:
        return Match(fid, what, why, fix, hit.evidence, {})

    return build


def _driver_too_old(d: Decider, hit: Hit) -> Match:
    fix = ("Upgrade the NVIDIA driver (e.g. sudo apt-get install nvidia-driver-580), or install an onnxruntime build for "
           "the CUDA major the driver supports (`ortdoctor matrix`; nvidia-smi shows the highest CUDA the driver "
           "supports)" + (f". {d._summary()}." if d._summary() else "."))
    drv = d._driver()
    unseen = _driver_unseen(d, hit, drv)
    if unseen is not None:
        return unseen
    # the driver the text shows, against the current builds' CUDA majors (the floors of the matrix): which of
    # them it runs, and the floor of the one it does not
    gate = d._driver_gate(sorted(d._current())) if drv is not None else None
    if drv is not None and gate is not None:
        d.used["driver-too-old"] = [drv]
        floors = ", ".join(f"CUDA {m} needs >= {f}" for m, f in gate.floors)
        if gate.runs:
            runs = max(gate.runs)
            fix = (f"The text shows driver {drv.value} (line {drv.line_no}); {floors}: it runs CUDA {runs} builds, not "
                   f"CUDA {' or '.join(map(str, gate.blocked))}. Install an onnxruntime build (and image) for CUDA "
                   f"{runs}: {d._ort_for(runs)}; or update the driver to >= {gate.floor(max(gate.blocked))}.")
        else:
            fix = (f"Update the NVIDIA driver: the text shows driver {drv.value} (line {drv.line_no}); {floors}. "
                   + fix)
        d._naming = []  # the fix already chose among the majors by the driver
    if hit.subject == "222":
        what = ("CUDA reports error 222 (cudaErrorUnsupportedPtxVersion): the PTX in the program was made by a newer "
                "CUDA toolkit than the driver can compile, so the driver is older than the program's CUDA.")
        why = ("A driver JIT-compiles PTX only up to the PTX ISA of its own CUDA release; kernels built by a newer "
               "toolkit (the program's CUDA minor, or a build whose only kernels for this GPU are PTX) need a driver "
               "at least as new as that toolkit.")
    else:
        what = ("CUDA reports error 35 (cudaErrorInsufficientDriver): the driver is older than the CUDA runtime "
                "onnxruntime was built with, or there is no usable driver at all.")
        why = ("Each CUDA major needs a minimum driver (CUDA 12: >= 525.60.13, CUDA 13: R580+ on Linux). In a container "
               "the image's CUDA can be newer than the host driver supports.")
    return Match("driver-too-old", what, why, fix, hit.evidence, {"driver": drv.value} if drv is not None else {})


def _driver_unseen(d: Decider, hit: Hit, drv: Evidence | None) -> Match | None:
    """Error 35 where the text shows a driver that runs the CUDA major the text shows (the build's or the
    machine's): that driver is not the one the process sees. A container started without the GPU (or with a
    misspelt NVIDIA_VISIBLE_DEVICES / runtime setting) finds no driver, or only a stub, and CUDA reports the
    missing driver as an insufficient one. None when the text does not show both, or the driver is too old."""
    if hit.subject == "35" and (said := d.ev.first("gpu.not_nvidia")) is not None:
        d.used["driver-missing"] = [said]
        doc = _CATALOG["driver-missing"]
        return Match(
            "driver-missing",
            f"CUDA reports error 35 (driver insufficient) on a machine the text says has no NVIDIA GPU (line "
            f"{said.line_no}: {said.line!r}): the CUDA provider finds no NVIDIA driver at all.",
            doc.cause + " CUDA reports the missing driver as an insufficient one.",
            "The CUDA execution provider needs an NVIDIA GPU and its driver: without one, ask for the CPU provider "
            "(providers=['CPUExecutionProvider'], or the program's provider setting set to cpu) and install the CPU "
            "onnxruntime package; on an Intel or AMD GPU use the provider for it (OpenVINO, DirectML, ROCm/MIGraphX).",
            hit.evidence, {"gpu": said.value},
        )
    major = d._evidenced_cuda()
    if hit.subject != "35" or drv is None or major is None or d.matrix is None:
        return None
    if not driver_runs(d.matrix, drv.value, d.stack.os, major):
        return None
    d.used["driver-missing"] = [drv, *d.ev.about("cuda.version", "cuda.major")]
    doc = _CATALOG["driver-missing"]
    return Match(
        "driver-missing",
        f"CUDA reports error 35 (driver insufficient), but the text shows driver {drv.value} (line {drv.line_no}), "
        f"which runs CUDA {major}: the process does not see that driver.",
        doc.cause + " CUDA reports a driver it cannot find as an insufficient one.",
        "Check what the process sees: run nvidia-smi where the program runs (inside the container); start the "
        "container with the GPU (docker run --gpus all, or runtime: nvidia / deploy.resources.reservations.devices "
        "in compose, with nvidia-container-toolkit on the host) and check NVIDIA_VISIBLE_DEVICES and "
        "NVIDIA_DRIVER_CAPABILITIES for typos and stray spaces; `ortdoctor check` inside it reads the driver it loads.",
        hit.evidence, {"driver": drv.value, "cuda_major": str(major)},
    )


def _no_device(d: Decider, hit: Hit) -> Match:
    return Match(
        "no-gpu-visible",
        "CUDA reports error 100 (cudaErrorNoDevice): no CUDA-capable device is visible.",
        "The driver loads but shows no GPU: Docker without --gpus, Kubernetes without a GPU resource, "
        "CUDA_VISIBLE_DEVICES empty or -1, NVIDIA_VISIBLE_DEVICES=void, or a machine without an NVIDIA GPU.",
        "docker run --gpus all ... (nvidia-container-toolkit on the host); unset or correct CUDA_VISIBLE_DEVICES; "
        "on a machine without an NVIDIA GPU use the CPU onnxruntime package instead of the GPU one.",
        hit.evidence, {},
    )


def _invalid_ordinal(d: Decider, hit: Hit) -> Match:
    gpu = hit.data.get("gpu")
    if gpu == "0":
        return Match(
            "invalid-device-ordinal",
            "CUDA reports error 101 (invalid device ordinal) for device 0: this process's CUDA runtime sees no GPU at "
            "all.",
            "Device 0 always exists when any GPU is visible, so the id is not the problem: the GPU is not visible to "
            "this process (CUDA_VISIBLE_DEVICES, a container without the GPU), or this onnxruntime build's CUDA "
            "runtime cannot use the driver and GPU it found.",
            "Run nvidia-smi in the same environment; check CUDA_VISIBLE_DEVICES and the container's GPU access; if the "
            "GPU is visible, try another onnxruntime release (one built for the CUDA the driver supports).",
            hit.evidence, {"gpu": gpu},
        )
    visible = hit.data.get("visible")
    seen = f"; this process sees {visible} GPU(s), ids 0 to {int(visible) - 1}" if visible and visible != "0" else ""
    return Match(
        "invalid-device-ordinal",
        "CUDA reports error 101 (invalid device ordinal): the requested device id is not a visible GPU"
        + (f" (device id {gpu}{seen})." if gpu is not None and len(gpu) < 4 else "."),
        "CUDA numbers the GPUs that CUDA_VISIBLE_DEVICES leaves visible from 0, so an id valid for the whole machine "
        "can be out of range, and -1 is never valid (code that leaves the device unset may pass -1).",
        "Pass a device id from 0 to the number of visible GPUs minus 1 (count after CUDA_VISIBLE_DEVICES); never -1.",
        hit.evidence, {"gpu": gpu} if gpu is not None else {},
    )


def _arch(d: Decider, hit: Hit) -> Match:
    stack = d.stack
    sm = gpu_names.sm_from_text(hit.evidence) or None
    family = None
    if sm is None and stack.gpu:
        named = gpu_names.sm_of_name(stack.gpu)
        if named:
            sm, family = named
    carried = ""
    found = d.matrix.release_for(d.ctx.ort_version) if d.matrix is not None and d.ctx.ort_version else None
    if found is not None and found.release.archs:
        archs = found.release.archs
        carried = f" onnxruntime-gpu {found.release.line}'s wheel carries {', '.join(archs)}"
        if sm:
            carried += f"; {sm} is {'among them' if _carries(archs, sm) else 'not among them'}"
        carried += "."
    elif sm and d.matrix is not None:  # the GPU without the version: which lines carry it
        lines = [r.line for r in d.matrix.releases if r.archs and _carries(r.archs, sm)]
        if lines:
            carried = f" The onnxruntime-gpu wheels that carry {sm}: {', '.join(lines)}."
    what = "CUDA reports cudaErrorNoKernelImageForDevice: this build has no kernels for the GPU"
    if stack.gpu or sm:
        what += f" ({', '.join(x for x in (stack.gpu, sm, family) if x)})"
    fix = ("Find the GPU's compute capability (nvidia-smi --query-gpu=name,compute_cap --format=csv) and use an "
           "onnxruntime build that carries it: new GPUs (Blackwell RTX 50xx / RTX PRO, sm_120) need a recent build; "
           "old GPUs (Maxwell, Pascal, Volta: sm_50-sm_70) are dropped by CUDA 13 builds, so use a CUDA 12 build; an "
           "Ampere GPU (sm_86) needs a build made with CUDA 11.1 or newer. Otherwise build onnxruntime from source "
           "for the GPU: --cmake_extra_defines CMAKE_CUDA_ARCHITECTURES=<cc> (CMAKE_CUDA_ARCHITECTURES=120 for "
           "sm_120, 87 for Jetson Orin), or use the Jetson Zoo wheel for the JetPack version.")
    return Match(
        "gpu-arch-unsupported", what + "." + carried,
        "Wheels carry device code for a fixed list of architectures. MatMul (cuBLAS) may still work while ORT's own "
        "kernels (Add, Relu, Mul, Cast) fail at run time.",
        fix, hit.evidence, {"sm": sm} if sm else {},
    )


def _carries(archs: tuple[str, ...], sm: str) -> bool:
    """Whether a wheel's architecture list has kernels for ``sm`` (``sm_120a`` counts for ``sm_120``)."""
    base = sm.rstrip("abf")
    return any(a.rstrip("abf") == base for a in archs)


def _illegal_address(d: Decider, hit: Hit) -> Match:
    stack = d.stack
    if stack.python:
        fix = ("Bind host data as CPU memory: with Optimum's ORTModel pass use_io_binding=False or move the inputs "
               "to the model's device (inputs.to('cuda')); with IOBinding, bind numpy/CPU tensors with device 'cpu' "
               "(ORT copies them) or real CUDA tensors with 'cuda'. If no binding is involved, rerun with "
               "CUDA_LAUNCH_BLOCKING=1 to find the node (it can be a kernel bug of that release).")
    else:
        fix = ("Create host inputs with CPU memory info (Ort::MemoryInfo::CreateCpu, OrtMemoryInfo for CPU; ORT copies "
               "them to the GPU), or allocate real device memory (cudaMalloc/cudaMemcpy) for a CUDA tensor. If no "
               "CUDA tensor is involved, rerun with CUDA_LAUNCH_BLOCKING=1 to find the node.")
    return Match(
        "iobinding-host-memory",
        "CUDA reports an illegal memory access (cudaErrorIllegalAddress).",
        _CATALOG["iobinding-host-memory"].cause, fix, hit.evidence, {},
    )


BY_CODE: dict[int, Callable[[Decider, Hit], Match]] = {
    35: _driver_too_old,
    222: _driver_too_old,  # cudaErrorUnsupportedPtxVersion: PTX newer than the driver's JIT
    100: _no_device,
    46: _no_device,  # cudaErrorDevicesUnavailable: an exclusive-process GPU already taken
    101: _invalid_ordinal,
    209: _arch,
    700: _illegal_address,
    3: _code_simple(
        "cuda-after-fork",
        "CUDA reports an initialization error when selecting or initialising the device.",
        "Typical in a process forked after CUDA was initialised in the parent (multiprocessing's default 'fork' on "
        "Linux): CUDA does not support fork() after initialisation.",
        'multiprocessing.set_start_method("spawn") before starting workers (never fork after CUDA is initialised), '
        "or create sessions only inside the workers.",
    ),
    804: _code_simple(
        "cuda-compat-on-unsupported-hw",
        "CUDA reports error 804: forward compatibility was attempted on hardware that does not support it.",
        "A container's cuda-compat libcuda (/usr/local/cuda/compat) only works on data-centre GPUs with a supported "
        "driver branch, or the host driver is older than the image needs.",
        "Remove the compat directory from LD_LIBRARY_PATH (or the image's ld.so.conf.d entry), or upgrade the host "
        "driver to what the image needs.",
    ),
    803: _code_simple(
        "driver-library-mismatch",
        "CUDA reports error 803: the system's display driver and CUDA driver do not match.",
        "The user-space driver libraries and the kernel module are from different driver versions (an upgrade "
        "without a reboot, or a container's libraries against another host driver).",
        "Reboot (or reload the nvidia kernel modules); align the container's driver libraries with the host.",
    ),
    999: _code_simple(
        "driver-error",
        "CUDA reports error 999 (unknown error) when initialising the device.",
        "The driver is installed but in a broken state, most often after suspend and resume (nvidia_uvm), or the GPU "
        "fell off the bus.",
        "sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm, or reboot; `nvidia-smi` shows the GPU's state.",
    ),
    2: _code_simple(
        "gpu-out-of-memory",
        "CUDA reports error 2 (out of memory).",
        "The GPU's memory is taken: other processes, or several sessions each keeping their own BFC arena that grows "
        "in powers of two.",
        "Stop other GPU processes (nvidia-smi lists them), use fewer sessions or threads, or limit the arena: "
        "('CUDAExecutionProvider', {'arena_extend_strategy': 'kSameAsRequested', 'gpu_mem_limit': N}).",
    ),
}
