"""Validate a parsed matrix document and build the model from it, refusing a bad file with the key path.

A hand-written validator (its errors name the file, the key path and what is wrong, which generic
schema libraries do not, and each of them costs more to import than validating takes). It runs on
``--matrix FILE`` and ``$ORTDOCTOR_MATRIX`` files and when the snapshot is generated; the shipped
matrix is loaded from the pre-validated snapshot (:mod:`.load`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from packaging.version import InvalidVersion, Version

from ortdoctor.core.bindings import BINDINGS
from ortdoctor.decide.kernels import parse_target
from ortdoctor.decide.matrix.model import (
    ARCH_PLATFORMS,
    WHEEL_PLATFORMS,
    CudaMajor,
    CudnnMajor,
    Feed,
    JetsonFacts,
    JetsonFeed,
    KnownBad,
    LibSpec,
    Matrix,
    MatrixError,
    PackageRow,
    PlatformArchs,
    Release,
    TensorrtBuild,
    TensorrtFacts,
    TensorrtGpuFloor,
    TensorrtMajor,
    TensorrtPip,
    TorchRelease,
    TorchVariant,
    glibc_floor,
    line_key,
    parse_cuda_request,
)
from ortdoctor.formats.distinfo import normalize

__all__ = ["validate"]

_T = TypeVar("_T")


def validate(file: str, data: Any) -> Matrix:
    """The model of a parsed document; raises :class:`MatrixError` naming ``file`` and the key path."""
    return _Validator(file).matrix(data)


class _Validator:
    """Turns the parsed YAML into dataclasses, checking each value's type on the way."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, key: str, message: str) -> MatrixError:
        return MatrixError(self.file, key, message)

    # -- primitives --------------------------------------------------------------------------------
    def mapping(self, value: Any, key: str) -> dict[Any, Any]:
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a mapping, got {_kind(value)}")
        return value

    def seq(self, value: Any, key: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list, got {_kind(value)}")
        return value

    def req(self, obj: dict[Any, Any], name: str, key: str) -> Any:
        if name not in obj:
            raise self.fail(f"{key}.{name}" if key else name, "missing required key")
        return obj[name]

    def string(self, value: Any, key: str, *, allow_none: bool = False) -> Any:
        if value is None and allow_none:
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.fail(key, f"expected a string, got {_kind(value)}")
        if isinstance(value, float):  # "12.0" written unquoted: keep the text the author meant
            raise self.fail(key, f"expected a quoted string, got the number {value!r} (write \"{value}\")")
        return str(value)

    def integer(self, value: Any, key: str, *, allow_none: bool = False) -> Any:
        if value is None and allow_none:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"expected an integer, got {_kind(value)}")
        return value

    def boolean(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {_kind(value)}")
        return value

    def strings(self, value: Any, key: str) -> tuple[str, ...]:
        if value is None:
            return ()
        return tuple(self.string(v, f"{key}[{i}]") for i, v in enumerate(self.seq(value, key)))

    def unknown_keys(self, obj: dict[Any, Any], allowed: Iterable[str], key: str) -> None:
        extra = sorted(str(k) for k in obj if k not in set(allowed))
        if extra:
            raise self.fail(f"{key}.{extra[0]}" if key else extra[0],
                            f"unknown key (allowed: {', '.join(sorted(allowed))})")

    def each(self, value: Any, key: str, fn: Callable[[Any, str], _T]) -> tuple[_T, ...]:
        return tuple(fn(item, f"{key}[{i}]") for i, item in enumerate(self.seq(value, key)))

    # -- the document ------------------------------------------------------------------------------
    def matrix(self, data: Any) -> Matrix:
        if data is None:
            raise self.fail("", "the file is empty")
        top = self.mapping(data, "(top level)")
        self.unknown_keys(top, ("schema", "feeds", "cuda_majors", "cudnn_majors", "torch", "packages", "tensorrt",
                                "platforms", "releases"), "")
        schema = self.integer(self.req(top, "schema", ""), "schema")
        if schema != 1:
            raise self.fail("schema", f"unsupported schema version {schema} (this ortdoctor reads 1)")
        feeds_raw = self.mapping(top.get("feeds") or {}, "feeds")
        feeds = {str(k): self.string(v, f"feeds.{k}") for k, v in feeds_raw.items()}
        self.feeds = feeds
        cuda_majors = self.cuda_majors(self.req(top, "cuda_majors", ""))
        cudnn_majors = self.cudnn_majors(self.req(top, "cudnn_majors", ""))
        torch = self.each(top.get("torch") or [], "torch", self.torch_release)
        releases = self.each(self.req(top, "releases", ""), "releases", self.release)
        packages, numpy_below_2 = self.packages(top.get("packages") or {})
        self.check_consistency(releases, cuda_majors, cudnn_majors, torch)
        tensorrt = self.tensorrt(top["tensorrt"], releases) if top.get("tensorrt") is not None else None
        platforms_source, jetson = self.platforms(top.get("platforms") or {})
        ordered = tuple(sorted(releases, key=lambda r: line_key(Version(r.line)), reverse=True))
        return Matrix(path=self.file, releases=ordered, cuda_majors=cuda_majors, cudnn_majors=cudnn_majors,
                      torch=torch, feeds=feeds, schema=schema, packages=packages, numpy_below_2=numpy_below_2,
                      tensorrt=tensorrt, platforms_source=platforms_source, jetson=jetson)

    def platforms(self, value: Any) -> tuple[str, JetsonFacts | None]:
        key = "platforms"
        obj = self.mapping(value, key)
        self.unknown_keys(obj, ("source", "jetson"), key)
        source = self.string(obj.get("source", ""), f"{key}.source")
        if obj.get("jetson") is None:
            return source, None
        where = f"{key}.jetson"
        jet = self.mapping(obj["jetson"], where)
        self.unknown_keys(jet, ("l4t_jetpack", "socs", "feeds", "source", "notes"), where)
        l4t = {str(self.integer(k, f"{where}.l4t_jetpack.{k}")): self.string(v, f"{where}.l4t_jetpack.{k}")
               for k, v in self.mapping(self.req(jet, "l4t_jetpack", where), f"{where}.l4t_jetpack").items()}
        socs = {}
        for k, v in self.mapping(self.req(jet, "socs", where), f"{where}.socs").items():
            cc = self.string(v, f"{where}.socs.{k}")
            if not re.fullmatch(r"\d+\.\d+", cc):
                raise self.fail(f"{where}.socs.{k}", f"expected a compute capability such as '8.7', got {cc!r}")
            socs[self.string(k, f"{where}.socs")] = cc
        return source, JetsonFacts(
            l4t_jetpack=l4t, socs=socs,
            feeds=self.each(jet.get("feeds") or [], f"{where}.feeds", self.jetson_feed),
            source=self.string(jet.get("source", ""), f"{where}.source"),
            notes=self.strings(jet.get("notes"), f"{where}.notes"),
        )

    def jetson_feed(self, value: Any, key: str) -> JetsonFeed:
        obj = self.mapping(value, key)
        self.unknown_keys(obj, ("jetpack", "index_url", "cuda", "note", "source", "pip_index"), key)
        url = self.string(self.req(obj, "index_url", key), f"{key}.index_url")
        if not url.startswith("https://"):
            raise self.fail(f"{key}.index_url", f"expected an https:// URL, got {url!r}")
        source = self.string(self.req(obj, "source", key), f"{key}.source")
        if not source.startswith("https://"):
            raise self.fail(f"{key}.source", "give the URL that says so")
        return JetsonFeed(
            jetpack=str(self.integer(self.req(obj, "jetpack", key), f"{key}.jetpack")),
            index_url=url, cuda=self.string(obj.get("cuda", ""), f"{key}.cuda"),
            note=self.string(obj.get("note", ""), f"{key}.note"), source=source,
            pip_index=self.boolean(obj.get("pip_index", True), f"{key}.pip_index"),
        )

    def wheel_platforms(self, value: Any, key: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, tag in self.mapping(value or {}, key).items():
            where = f"{key}.{name}"
            if name not in WHEEL_PLATFORMS:
                raise self.fail(where, f"unknown wheel platform (allowed: {', '.join(WHEEL_PLATFORMS)})")
            text = self.string(tag, where)
            arch = "amd64" if name == "win_amd64" else str(name).split("_", 1)[1]
            if not all(part.endswith(arch) for part in text.split(".")) or (
                    name.startswith("linux") and glibc_floor(text) is None):
                raise self.fail(where, f"expected the platform tag of the {name} wheel's file name (such as "
                                       f"manylinux_2_28_x86_64 or win_amd64), got {text!r}")
            out[str(name)] = text
        return out

    def packages(self, value: Any) -> tuple[dict[str, PackageRow], dict[str, str | None]]:
        key = "packages"
        obj = self.mapping(value, key)
        self.unknown_keys(obj, ("source", "wheels", "numpy_below_2"), key)
        rows: dict[str, PackageRow] = {}
        for name, raw in self.mapping(obj.get("wheels") or {}, f"{key}.wheels").items():
            where = f"{key}.wheels.{name}"
            row = self.mapping(raw, where)
            self.unknown_keys(row, ("cuda", "versions", "note"), where)
            text = self.string(name, where)
            if text != normalize(text):
                raise self.fail(where, f"write the name normalised (PEP 503): {re.sub(r'[-_.]+', '-', text).lower()}")
            versions = self.strings(row.get("versions"), f"{where}.versions")
            for i, v in enumerate(versions):
                try:
                    Version(v)
                except InvalidVersion:
                    raise self.fail(f"{where}.versions[{i}]", f"{v!r} is not a PEP 440 version") from None
            rows[text] = PackageRow(text, versions, self.integer(row.get("cuda"), f"{where}.cuda", allow_none=True),
                                    self.string(row.get("note") or "", f"{where}.note"))
        numpy = {self.string(k, f"{key}.numpy_below_2"): self.string(v, f"{key}.numpy_below_2.{k}", allow_none=True)
                 for k, v in self.mapping(obj.get("numpy_below_2") or {}, f"{key}.numpy_below_2").items()}
        return rows, numpy

    def lib(self, value: Any, key: str) -> LibSpec:
        obj = self.mapping(value, key)
        allowed = ("name", "soname", "windows_dll", "load", "package", "linux_dirs", "windows_dirs",
                   "version_function", "depends", "sublibrary_of")
        self.unknown_keys(obj, allowed, key)
        load = self.string(self.req(obj, "load", key), f"{key}.load")
        if load not in ("required", "lazy"):
            raise self.fail(f"{key}.load", f"must be 'required' or 'lazy', got {load!r}")
        return LibSpec(
            name=self.string(self.req(obj, "name", key), f"{key}.name"),
            soname=self.string(self.req(obj, "soname", key), f"{key}.soname"),
            windows_dll=self.string(obj.get("windows_dll"), f"{key}.windows_dll", allow_none=True),
            load=load,
            package=self.string(obj.get("package"), f"{key}.package", allow_none=True),
            linux_dirs=self.strings(obj.get("linux_dirs"), f"{key}.linux_dirs"),
            windows_dirs=self.strings(obj.get("windows_dirs"), f"{key}.windows_dirs"),
            version_function=self.string(obj.get("version_function"), f"{key}.version_function",
                                         allow_none=True),
            depends=self.strings(obj.get("depends"), f"{key}.depends"),
            sublibrary_of=self.string(obj.get("sublibrary_of"), f"{key}.sublibrary_of", allow_none=True),
        )

    def driver_map(self, value: Any, key: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for k, v in self.mapping(value or {}, key).items():
            ks = self.string(k, f"{key}.{k}")
            if not re.fullmatch(r"\d+\.\d+", ks):
                raise self.fail(f"{key}.{k}", "keys are CUDA versions written major.minor, e.g. '12.8'")
            out[ks] = self.string(v, f"{key}.{ks}")
        return out

    def cuda_majors(self, value: Any) -> dict[int, CudaMajor]:
        out: dict[int, CudaMajor] = {}
        for k, v in self.mapping(value, "cuda_majors").items():
            key = f"cuda_majors.{k}"
            major = self.integer(k, key)
            obj = self.mapping(v, key)
            self.unknown_keys(obj, ("libraries", "min_driver", "min_driver_by_minor", "wheel_packages",
                                    "source", "notes"), key)
            driver = self.mapping(self.req(obj, "min_driver", key), f"{key}.min_driver")
            self.unknown_keys(driver, ("linux", "windows", "source", "note"), f"{key}.min_driver")
            by_minor = self.mapping(obj.get("min_driver_by_minor") or {}, f"{key}.min_driver_by_minor")
            self.unknown_keys(by_minor, ("linux", "windows", "source"), f"{key}.min_driver_by_minor")
            libs = self.each(self.req(obj, "libraries", key), f"{key}.libraries", self.lib)
            notes = self.strings(obj.get("notes"), f"{key}.notes")
            note = self.string(driver.get("note"), f"{key}.min_driver.note", allow_none=True)
            out[major] = CudaMajor(
                major=major,
                libraries=libs,
                min_driver_linux=self.string(self.req(driver, "linux", f"{key}.min_driver"),
                                             f"{key}.min_driver.linux"),
                min_driver_windows=self.string(self.req(driver, "windows", f"{key}.min_driver"),
                                               f"{key}.min_driver.windows"),
                min_driver_by_minor_linux=self.driver_map(by_minor.get("linux"),
                                                          f"{key}.min_driver_by_minor.linux"),
                min_driver_by_minor_windows=self.driver_map(by_minor.get("windows"),
                                                            f"{key}.min_driver_by_minor.windows"),
                wheel_packages=self.strings(obj.get("wheel_packages"), f"{key}.wheel_packages"),
                source=self.string(obj.get("source", ""), f"{key}.source"),
                driver_source=self.string(self.req(driver, "source", f"{key}.min_driver"),
                                          f"{key}.min_driver.source"),
                notes=(*notes, *((note,) if note else ())),
            )
        if not out:
            raise self.fail("cuda_majors", "must list at least one CUDA major")
        return out

    def cudnn_majors(self, value: Any) -> dict[int, CudnnMajor]:
        out: dict[int, CudnnMajor] = {}
        for k, v in self.mapping(value, "cudnn_majors").items():
            key = f"cudnn_majors.{k}"
            major = self.integer(k, key)
            obj = self.mapping(v, key)
            self.unknown_keys(obj, ("libraries", "packages", "source", "notes"), key)
            packages = {self.integer(ck, f"{key}.packages.{ck}"): self.string(cv, f"{key}.packages.{ck}")
                        for ck, cv in self.mapping(obj.get("packages") or {}, f"{key}.packages").items()}
            out[major] = CudnnMajor(
                major=major,
                libraries=self.each(self.req(obj, "libraries", key), f"{key}.libraries", self.lib),
                packages=packages,
                source=self.string(obj.get("source", ""), f"{key}.source"),
                notes=self.strings(obj.get("notes"), f"{key}.notes"),
            )
        return out

    def torch_release(self, value: Any, key: str) -> TorchRelease:
        obj = self.mapping(value, key)
        self.unknown_keys(obj, ("version", "variants", "source", "notes", "python"), key)
        version = self.string(self.req(obj, "version", key), f"{key}.version")
        if not re.fullmatch(r"\d+\.\d+", version):
            raise self.fail(f"{key}.version", f"expected a torch release line such as '2.4', got {version!r}")
        python = self.strings(obj.get("python"), f"{key}.python")
        for p in python:
            if not re.fullmatch(r"3\.\d+", p):
                raise self.fail(f"{key}.python", f"expected Python versions such as '3.11', got {p!r}")
        return TorchRelease(
            version=version,
            variants=self.each(self.req(obj, "variants", key), f"{key}.variants", self.torch_variant),
            source=self.string(obj.get("source", ""), f"{key}.source"),
            notes=self.strings(obj.get("notes"), f"{key}.notes"),
            python=python,
        )

    def torch_variant(self, value: Any, key: str) -> TorchVariant:
        obj = self.mapping(value, key)
        self.unknown_keys(obj, ("cuda", "tag", "cudnn", "index_url", "pypi_default", "source"), key)
        cuda = self.string(self.req(obj, "cuda", key), f"{key}.cuda")
        if cuda != "cpu" and parse_cuda_request(cuda) is None:
            raise self.fail(f"{key}.cuda", f"expected 'cpu' or a CUDA version such as '12.4', got {cuda!r}")
        cudnn = self.string(obj.get("cudnn"), f"{key}.cudnn", allow_none=True)
        if cudnn is not None and not re.fullmatch(r"\d+(\.[\dx]+)*", cudnn):
            raise self.fail(f"{key}.cudnn", f"expected a cuDNN version such as '9.1.0', got {cudnn!r}")
        return TorchVariant(
            cuda=cuda,
            tag=self.string(self.req(obj, "tag", key), f"{key}.tag"),
            cudnn=cudnn,
            index_url=self.string(obj.get("index_url"), f"{key}.index_url", allow_none=True),
            pypi_default=self.boolean(obj.get("pypi_default", False), f"{key}.pypi_default"),
            source=self.string(obj.get("source", ""), f"{key}.source"),
        )

    def index_url(self, value: Any, key: str) -> str | None:
        text: str | None = self.string(value, key, allow_none=True)
        if text is None or text.startswith(("https://", "http://", "file://")):
            return text
        if text in self.feeds:  # a name from the top-level `feeds` table
            feed: str = self.feeds[text]
            return feed
        raise self.fail(key, f"{text!r} is neither a URL nor a name under `feeds` "
                             f"({', '.join(sorted(self.feeds)) or 'none defined'})")

    def feed(self, value: Any, key: str) -> Feed:
        obj = self.mapping(value, key)
        self.unknown_keys(obj, ("cuda", "cudnn_major", "cudnn", "index_url", "note", "versions", "source", "bindings"),
                          key)
        cuda = self.string(self.req(obj, "cuda", key), f"{key}.cuda")
        if parse_cuda_request(cuda) is None:
            raise self.fail(f"{key}.cuda", f"expected a CUDA version such as '12.x' or '11.8', got {cuda!r}")
        return Feed(
            cuda=cuda,
            cudnn_major=self.integer(obj.get("cudnn_major"), f"{key}.cudnn_major", allow_none=True),
            index_url=self.index_url(obj.get("index_url"), f"{key}.index_url"),
            note=self.string(obj.get("note", ""), f"{key}.note"),
            versions=self.versions(obj.get("versions"), f"{key}.versions"),
            cudnn=self.string(obj.get("cudnn"), f"{key}.cudnn", allow_none=True),
            source=self.string(obj.get("source", ""), f"{key}.source"),
            bindings=self.feed_bindings(obj.get("bindings"), f"{key}.bindings"),
        )

    def feed_bindings(self, value: Any, key: str) -> tuple[str, ...]:
        out = self.strings(value, key)
        for i, b in enumerate(out):
            if b not in BINDINGS:
                raise self.fail(f"{key}[{i}]", f"expected one of {', '.join(BINDINGS)}, got {b!r}")
        return out

    def versions(self, value: Any, key: str) -> tuple[str, ...]:
        out = self.strings(value, key)
        for i, v in enumerate(out):
            try:
                Version(v)
            except InvalidVersion:
                raise self.fail(f"{key}[{i}]", f"not a PEP 440 version: {v!r}") from None
        dupes = sorted({v for v in out if out.count(v) > 1})
        if dupes:
            raise self.fail(key, f"duplicate version {dupes[0]}")
        return out

    def known_bad(self, value: Any, key: str) -> KnownBad:
        obj = self.mapping(value, key)
        self.unknown_keys(obj, ("version", "problem", "fix", "affects", "source"), key)
        return KnownBad(
            version=self.string(self.req(obj, "version", key), f"{key}.version"),
            problem=self.string(self.req(obj, "problem", key), f"{key}.problem"),
            fix=self.string(self.req(obj, "fix", key), f"{key}.fix"),
            affects=self.string(obj.get("affects"), f"{key}.affects", allow_none=True),
        )

    def archs(self, obj: dict[Any, Any], key: str) -> tuple[tuple[str, ...], str | None]:
        """``archs`` (kernel targets, SASS then PTX) and ``ptx_isa`` (required exactly when there is PTX)."""
        archs = self.strings(obj.get("archs"), f"{key}.archs")
        for i, name in enumerate(archs):
            target = parse_target(name)
            if target is None or target.name != name:
                raise self.fail(f"{key}.archs[{i}]", f"expected a kernel target such as 'sm_90', 'sm_90a' or "
                                                     f"'compute_90', got {name!r}")
        dupes = sorted({a for a in archs if archs.count(a) > 1})
        if dupes:
            raise self.fail(f"{key}.archs", f"duplicate target {dupes[0]}")
        ptx_isa = self.string(obj.get("ptx_isa"), f"{key}.ptx_isa", allow_none=True)
        has_ptx = any(a.startswith("compute_") for a in archs)
        if ptx_isa is not None and not re.fullmatch(r"\d+\.\d+", ptx_isa):
            raise self.fail(f"{key}.ptx_isa", f"expected a PTX ISA version such as '8.2', got {ptx_isa!r}")
        if has_ptx and ptx_isa is None:
            raise self.fail(f"{key}.ptx_isa", "missing: the archs list PTX (compute_XY), whose ISA version "
                                              "decides which drivers can JIT it")
        if ptx_isa is not None and not has_ptx:
            raise self.fail(f"{key}.ptx_isa", "given, but the archs list no PTX (compute_XY)")
        return archs, ptx_isa

    def isolated(self, obj: dict[Any, Any], archs: tuple[str, ...], key: str) -> tuple[str, ...]:
        isolated = self.strings(obj.get("isolated"), f"{key}.isolated")
        for i, name in enumerate(isolated):
            if name not in archs or not name.endswith("a"):
                raise self.fail(f"{key}.isolated[{i}]", f"{name!r} is not an arch-specific target of the archs")
        return isolated

    def platform_archs(self, value: Any, key: str) -> PlatformArchs:
        obj = self.mapping(value, key)
        self.unknown_keys(obj, ("archs", "ptx_isa", "isolated", "source"), key)
        self.req(obj, "archs", key)
        archs, ptx_isa = self.archs(obj, key)
        isolated = self.isolated(obj, archs, key)
        source = self.string(self.req(obj, "source", key), f"{key}.source")
        if not source.endswith(".whl"):
            raise self.fail(f"{key}.source", "must name the .whl file read")
        return PlatformArchs(archs=archs, ptx_isa=ptx_isa, source=source, isolated=isolated)

    def release(self, value: Any, key: str) -> Release:
        obj = self.mapping(value, key)
        allowed = ("line", "versions", "cuda", "cudnn_major", "cudnn", "source", "source_ref", "python",
                   "torch", "feeds", "provider_needed", "pybind_needed_cuda", "extras", "archs",
                   "ptx_isa", "archs_source", "isolated", "platform_archs", "known_bad", "notes", "wheels", "requires",
                   "tensorrt_needed", "pypi", "wheel_platforms", "windows_needed", "windows_tensorrt_needed",
                   "windows_source")
        self.unknown_keys(obj, allowed, key)
        line = self.string(self.req(obj, "line", key), f"{key}.line")
        if not re.fullmatch(r"\d+\.\d+", line):
            raise self.fail(f"{key}.line", f"expected a release line such as '1.20', got {line!r}")
        cuda = self.string(self.req(obj, "cuda", key), f"{key}.cuda")
        if parse_cuda_request(cuda) is None:
            raise self.fail(f"{key}.cuda", f"expected a CUDA version such as '12.2' or '12.x', got {cuda!r}")
        source = self.string(self.req(obj, "source", key), f"{key}.source")
        if source not in ("wheel", "doc"):
            raise self.fail(f"{key}.source", f"must be 'wheel' or 'doc', got {source!r}")
        source_ref = self.string(self.req(obj, "source_ref", key), f"{key}.source_ref")
        if source == "wheel" and not source_ref.endswith(".whl"):
            raise self.fail(f"{key}.source_ref", "a row with source 'wheel' must name the .whl file read")
        if source == "doc" and not source_ref.startswith(("https://", "http://")):
            raise self.fail(f"{key}.source_ref", "a row with source 'doc' must give the URL")
        torch = self.string(obj.get("torch"), f"{key}.torch", allow_none=True)
        if torch is not None:
            from packaging.specifiers import InvalidSpecifier, SpecifierSet

            try:
                SpecifierSet(torch)
            except InvalidSpecifier:
                raise self.fail(f"{key}.torch", f"not a PEP 440 specifier: {torch!r}") from None
        extras_raw = self.mapping(obj.get("extras") or {}, f"{key}.extras")
        extras = {str(k): self.strings(v, f"{key}.extras.{k}") for k, v in extras_raw.items()}
        wheels_raw = self.mapping(obj.get("wheels") or {}, f"{key}.wheels")
        wheels = {self.string(k, f"{key}.wheels.{k}"): self.string(v, f"{key}.wheels.{k}")
                  for k, v in wheels_raw.items()}
        archs, ptx_isa = self.archs(obj, key)
        archs_source = self.string(obj.get("archs_source", ""), f"{key}.archs_source")
        if archs_source and not archs_source.endswith(".whl"):
            raise self.fail(f"{key}.archs_source", "must name the .whl file read")
        if archs and source != "wheel" and not archs_source:
            raise self.fail(f"{key}.archs", "architectures are read from a wheel: name it in archs_source "
                                            "(the row's source_ref is a document)")
        platform_raw = self.mapping(obj.get("platform_archs") or {}, f"{key}.platform_archs")
        platform_archs = {}
        for name, entry in platform_raw.items():
            pkey = f"{key}.platform_archs.{name}"
            if name not in ARCH_PLATFORMS:
                raise self.fail(pkey, f"unknown wheel platform (allowed: {', '.join(ARCH_PLATFORMS)}; the "
                                      "Linux x86_64 wheel's are the row's own `archs`)")
            platform_archs[str(name)] = self.platform_archs(entry, pkey)
        return Release(
            line=line,
            versions=self.versions(self.req(obj, "versions", key), f"{key}.versions"),
            cuda=cuda,
            cudnn_major=self.integer(self.req(obj, "cudnn_major", key), f"{key}.cudnn_major", allow_none=True),
            cudnn=self.string(obj.get("cudnn"), f"{key}.cudnn", allow_none=True),
            source=source,
            source_ref=source_ref,
            python=self.strings(obj.get("python"), f"{key}.python"),
            torch=torch,
            feeds=self.each(obj.get("feeds") or [], f"{key}.feeds", self.feed),
            provider_needed=self.strings(obj.get("provider_needed"), f"{key}.provider_needed"),
            pybind_needed_cuda=self.strings(obj.get("pybind_needed_cuda"), f"{key}.pybind_needed_cuda"),
            extras=extras,
            archs=archs,
            ptx_isa=ptx_isa,
            archs_source=archs_source,
            isolated=self.isolated(obj, archs, key),
            platform_archs=platform_archs,
            known_bad=self.each(obj.get("known_bad") or [], f"{key}.known_bad", self.known_bad),
            notes=self.strings(obj.get("notes"), f"{key}.notes"),
            wheels=wheels,
            requires=self.strings(obj.get("requires"), f"{key}.requires"),
            tensorrt_needed=self.strings(obj.get("tensorrt_needed"), f"{key}.tensorrt_needed"),
            pypi=self.boolean(obj.get("pypi", True), f"{key}.pypi"),
            wheel_platforms=self.wheel_platforms(obj.get("wheel_platforms"), f"{key}.wheel_platforms"),
            **self.windows_imports(obj, key),
        )

    def windows_imports(self, obj: dict[Any, Any], key: str) -> dict[str, Any]:
        needed = self.strings(obj.get("windows_needed"), f"{key}.windows_needed")
        trt = self.strings(obj.get("windows_tensorrt_needed"), f"{key}.windows_tensorrt_needed")
        source = self.string(obj.get("windows_source", ""), f"{key}.windows_source")
        for name, values in (("windows_needed", needed), ("windows_tensorrt_needed", trt)):
            for i, dll in enumerate(values):
                if not dll.lower().endswith(".dll"):
                    raise self.fail(f"{key}.{name}[{i}]", f"expected a DLL name, got {dll!r}")
        if (needed or trt) and not source.endswith("win_amd64.whl"):
            raise self.fail(f"{key}.windows_source", "name the win_amd64 .whl whose import tables were read")
        return {"windows_needed": needed, "windows_tensorrt_needed": trt, "windows_source": source}

    # -- tensorrt ----------------------------------------------------------------------------------
    def tensorrt(self, value: Any, releases: tuple[Release, ...]) -> TensorrtFacts:
        obj = self.mapping(value, "tensorrt")
        self.unknown_keys(obj, ("index_url", "source", "notes", "layouts", "majors", "builds", "gpu_floors"),
                          "tensorrt")
        majors: dict[int, TensorrtMajor] = {}
        for k, v in self.mapping(self.req(obj, "majors", "tensorrt"), "tensorrt.majors").items():
            major = self.integer(k, f"tensorrt.majors.{k}")
            majors[major] = self.tensorrt_major(major, v, f"tensorrt.majors.{major}")
        layouts_raw = self.mapping(obj.get("layouts") or {}, "tensorrt.layouts")
        facts = TensorrtFacts(
            majors=majors,
            builds=self.each(obj.get("builds") or [], "tensorrt.builds", self.tensorrt_build),
            gpu_floors=self.each(obj.get("gpu_floors") or [], "tensorrt.gpu_floors", self.tensorrt_gpu_floor),
            index_url=self.string(obj.get("index_url", ""), "tensorrt.index_url"),
            layouts={str(k): self.string(v, f"tensorrt.layouts.{k}") for k, v in layouts_raw.items()},
            source=self.string(obj.get("source", ""), "tensorrt.source"),
            notes=self.strings(obj.get("notes"), "tensorrt.notes"),
        )
        self.check_tensorrt(facts, releases)
        return facts

    def tensorrt_gpu_floor(self, value: Any, key: str) -> TensorrtGpuFloor:
        obj = self.mapping(value, key)
        self.unknown_keys(obj, ("since", "sm", "source"), key)
        since = self.string(self.req(obj, "since", key), f"{key}.since")
        if not re.fullmatch(r"\d{1,2}\.\d{1,2}", since):
            raise self.fail(f"{key}.since", f"expected a TensorRT major.minor such as '10.0', got {since!r}")
        source = self.string(self.req(obj, "source", key), f"{key}.source")
        return TensorrtGpuFloor(since=since, sm=self.integer(self.req(obj, "sm", key), f"{key}.sm"), source=source)

    def tensorrt_major(self, major: int, value: Any, key: str) -> TensorrtMajor:
        obj = self.mapping(value, key)
        self.unknown_keys(obj, ("libraries", "builder_resource", "pip", "apt", "source", "notes"), key)
        libs = self.each(self.req(obj, "libraries", key), f"{key}.libraries", self.lib)
        for i, lib in enumerate(libs):
            if not re.fullmatch(rf"lib(nvinfer|nvinfer_plugin|nvonnxparser)\.so\.{major}", lib.soname):
                raise self.fail(f"{key}.libraries[{i}].soname",
                                f"{lib.soname!r} is not a TensorRT {major} soname (libnvinfer*.so.{major})")
            for dep in lib.depends:
                if dep not in [x.name for x in libs[:i]]:
                    raise self.fail(f"{key}.libraries[{i}].depends",
                                    f"{dep!r} must be listed before {lib.name!r} (load order)")
        resource = self.string(self.req(obj, "builder_resource", key), f"{key}.builder_resource")
        if resource != f"libnvinfer_builder_resource.so.{major}":
            raise self.fail(f"{key}.builder_resource", f"expected 'libnvinfer_builder_resource.so.{major}'")
        pip: dict[int, TensorrtPip] = {}
        for ck, cv in self.mapping(obj.get("pip") or {}, f"{key}.pip").items():
            pkey = f"{key}.pip.{ck}"
            cuda = self.integer(ck, pkey)
            entry = self.mapping(cv, pkey)
            self.unknown_keys(entry, ("package", "libs_package", "first", "last"), pkey)
            first, last = (self.string(self.req(entry, n, pkey), f"{pkey}.{n}") for n in ("first", "last"))
            for n, v in (("first", first), ("last", last)):
                if not v.startswith(f"{major}."):
                    raise self.fail(f"{pkey}.{n}", f"{v} is not a TensorRT {major} version")
            pip[cuda] = TensorrtPip(
                cuda_major=cuda,
                package=self.string(self.req(entry, "package", pkey), f"{pkey}.package"),
                libs_package=self.string(entry.get("libs_package"), f"{pkey}.libs_package", allow_none=True),
                first=first,
                last=last,
            )
        return TensorrtMajor(
            major=major,
            libraries=libs,
            builder_resource=resource,
            pip=pip,
            apt=self.strings(obj.get("apt"), f"{key}.apt"),
            source=self.string(obj.get("source", ""), f"{key}.source"),
            notes=self.strings(obj.get("notes"), f"{key}.notes"),
        )

    def tensorrt_build(self, value: Any, key: str) -> TensorrtBuild:
        obj = self.mapping(value, key)
        self.unknown_keys(obj, ("lines", "tensorrt", "cuda", "source"), key)
        lines = self.strings(self.req(obj, "lines", key), f"{key}.lines")
        for i, line in enumerate(lines):
            if not re.fullmatch(r"\d+\.\d+", line):
                raise self.fail(f"{key}.lines[{i}]", f"expected a release line such as '1.24', got {line!r}")
        version = self.string(self.req(obj, "tensorrt", key), f"{key}.tensorrt")
        if not re.fullmatch(r"\d+\.\d+", version):
            raise self.fail(f"{key}.tensorrt", f"expected a TensorRT major.minor such as '10.14', got {version!r}")
        cuda_raw = self.seq(obj.get("cuda") or [], f"{key}.cuda")
        source = self.string(self.req(obj, "source", key), f"{key}.source")
        if not source:
            raise self.fail(f"{key}.source", "every TensorRT build row names its source")
        return TensorrtBuild(lines=lines, tensorrt=version,
                             cuda=tuple(self.integer(c, f"{key}.cuda[{i}]") for i, c in enumerate(cuda_raw)),
                             source=source)

    def check_tensorrt(self, facts: TensorrtFacts, releases: tuple[Release, ...]) -> None:
        """Each line in one build row at most, and a documented major that agrees with the wheel's DT_NEEDED."""
        by_line = {r.line: r for r in releases}
        seen: dict[str, int] = {}
        for i, build in enumerate(facts.builds):
            for line in build.lines:
                if line in seen:
                    raise self.fail(f"tensorrt.builds[{i}].lines", f"{line} is also in tensorrt.builds[{seen[line]}]")
                seen[line] = i
                release = by_line.get(line)
                if release is None:
                    continue  # a documented line the releases do not list: the row stays a documentation fact
                for soname in release.tensorrt_needed:
                    m = re.fullmatch(r"libnvinfer\.so\.(\d+)", soname)
                    if m and int(m.group(1)) != build.major:
                        raise self.fail(f"tensorrt.builds[{i}].tensorrt",
                                        f"TensorRT {build.tensorrt} for {line}, but its wheel links {soname}")

    # -- cross-checks ------------------------------------------------------------------------------
    def check_consistency(self, releases: tuple[Release, ...], cuda_majors: dict[int, CudaMajor],
                          cudnn_majors: dict[int, CudnnMajor], torch: tuple[TorchRelease, ...]) -> None:
        for major, cm in cuda_majors.items():
            key = f"cuda_majors.{major}"
            names = [lib.name for lib in cm.libraries]
            for i, lib in enumerate(cm.libraries):
                self.check_soname(lib, f"{key}.libraries[{i}]", major)
                for dep in lib.depends:
                    if dep not in names[:i]:
                        raise self.fail(f"{key}.libraries[{i}].depends",
                                        f"{dep!r} must be listed before {lib.name!r} (load order)")
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise self.fail(f"{key}.libraries", f"duplicate library {dupes[0]!r}")
        for major, dm in cudnn_majors.items():
            key = f"cudnn_majors.{major}"
            for i, lib in enumerate(dm.libraries):
                if not re.fullmatch(rf"libcudnn(_[a-z_]+)?\.so\.{major}", lib.soname):
                    raise self.fail(f"{key}.libraries[{i}].soname",
                                    f"{lib.soname!r} is not a cuDNN {major} soname (libcudnn*.so.{major})")
            for cuda in dm.packages:
                if cuda not in cuda_majors:
                    raise self.fail(f"{key}.packages.{cuda}", f"CUDA major {cuda} has no `cuda_majors` entry")
        seen_lines: dict[str, int] = {}
        seen_versions: dict[str, str] = {}
        for i, r in enumerate(releases):
            key = f"releases[{i}]"
            if r.line in seen_lines:
                raise self.fail(f"{key}.line", f"duplicate release line {r.line} "
                                               f"(also releases[{seen_lines[r.line]}])")
            seen_lines[r.line] = i
            for j, v in enumerate(r.versions):
                if line_key(Version(v)) != line_key(Version(r.line)):
                    raise self.fail(f"{key}.versions[{j}]", f"{v} does not belong to line {r.line}")
                if v in seen_versions:
                    raise self.fail(f"{key}.versions[{j}]", f"duplicate version {v} (also in {seen_versions[v]})")
                seen_versions[v] = key
            self.check_build(r.cuda_major, r.cudnn_major, key, cuda_majors, cudnn_majors)
            for j, f in enumerate(r.feeds):
                self.check_build(f.cuda_major, f.cudnn_major, f"{key}.feeds[{j}]", cuda_majors, cudnn_majors)
                for k, v in enumerate(f.versions):
                    if v not in r.versions:
                        raise self.fail(f"{key}.feeds[{j}].versions[{k}]",
                                        f"{v} is not one of the line's versions")
            for j, kb in enumerate(r.known_bad):
                if kb.version not in r.versions:
                    raise self.fail(f"{key}.known_bad[{j}].version", f"{kb.version} is not one of the line's versions")
            for j, soname in enumerate(r.provider_needed):
                m = re.fullmatch(r"lib(cudart|cublasLt|cublas|nvrtc)\.so\.(\d+)(?:\.\d+)*", soname)
                if m and int(m.group(2)) != r.cuda_major:
                    raise self.fail(f"{key}.provider_needed[{j}]",
                                    f"{soname} belongs to CUDA {m.group(2)}, but the release says CUDA {r.cuda}")
            # every CUDA/cuDNN DLL the Windows provider imports is a row of the line's majors: a DLL name the
            # matrix lacks would be neither searched for nor preloaded on Windows
            dlls = {(lib.windows_dll or "").lower() for lib in [
                *(cuda_majors[r.cuda_major].libraries if r.cuda_major in cuda_majors else ()),
                *(cudnn_majors[r.cudnn_major].libraries if r.cudnn_major in cudnn_majors else ())]}
            for j, dll in enumerate(r.windows_needed):
                if dll.lower() not in dlls:
                    raise self.fail(f"{key}.windows_needed[{j}]",
                                    f"{dll} is no windows_dll of CUDA {r.cuda_major} or cuDNN {r.cudnn_major}")
            if r.source == "wheel" and r.source_ref not in r.wheels.values() and r.wheels:
                raise self.fail(f"{key}.source_ref", "names a wheel that `wheels` does not list")
        for i, t in enumerate(torch):
            for j, tv in enumerate(t.variants):
                if tv.cuda_major is not None and tv.cuda_major not in cuda_majors:
                    raise self.fail(f"torch[{i}].variants[{j}].cuda",
                                    f"CUDA major {tv.cuda_major} has no `cuda_majors` entry")

    def check_build(self, cuda: int, cudnn: int | None, key: str, cuda_majors: dict[int, CudaMajor],
                    cudnn_majors: dict[int, CudnnMajor]) -> None:
        if cuda not in cuda_majors:
            raise self.fail(f"{key}.cuda", f"CUDA major {cuda} has no `cuda_majors` entry "
                                           f"(known: {', '.join(map(str, sorted(cuda_majors)))})")
        if cudnn is not None and cudnn not in cudnn_majors:
            raise self.fail(f"{key}.cudnn_major", f"cuDNN major {cudnn} has no `cudnn_majors` entry "
                                                  f"(known: {', '.join(map(str, sorted(cudnn_majors)))})")

    def check_soname(self, lib: LibSpec, key: str, major: int) -> None:
        """Sonames whose number is the CUDA major must carry this major (cufft/curand have their own)."""
        m = re.fullmatch(r"lib(cudart|cublasLt|cublas|nvrtc|nvJitLink)\.so\.(\d+)(?:\.\d+)*", lib.soname)
        if m and int(m.group(2)) != major:
            raise self.fail(f"{key}.soname", f"{lib.soname} belongs to CUDA {m.group(2)}, not CUDA {major}")
        if lib.windows_dll and lib.name in ("cudart", "cublas", "cublasLt"):
            dm = re.search(r"64_(\d+)\.dll$", lib.windows_dll)
            if dm and not dm.group(1).startswith(str(major)):
                raise self.fail(f"{key}.windows_dll",
                                f"{lib.windows_dll} belongs to CUDA {dm.group(1)[:2]}, not CUDA {major}")


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "a mapping"}.get(type(value), type(value).__name__)
