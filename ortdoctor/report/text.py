"""The human report: one screen, read top to bottom.

A verdict line first, then what was found (Python, onnxruntime, PyTorch, driver/GPU, libraries,
smoke) with ✔/⚠/✘, then every problem with its fix underneath. Returns a string; the caller
decides about colour (``color=True`` only for a terminal without NO_COLOR).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ortdoctor._version import __version__
from ortdoctor.core.execution_providers import smoke_provider
from ortdoctor.core.facts import ElfInfo, Finding
from ortdoctor.core.shell import split_fix
from ortdoctor.core.terminal import terminal_safe
from ortdoctor.decide.loader_view import SOURCE_WORDS, LibraryRow
from ortdoctor.report.fix_block import FirstFix, first_fix
from ortdoctor.report.model import Report
from ortdoctor.report.wrap import fill, wrap

__all__ = ["format_timings", "render"]

OK, WARN, FAIL, INFO = "✔", "⚠", "✘", "ℹ"
_WIDTH = 100
_LABEL = 13  # width of the section labels


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color and text else text

    def red(self, t: str) -> str:
        return self._wrap("31", t)

    def yellow(self, t: str) -> str:
        return self._wrap("33", t)

    def green(self, t: str) -> str:
        return self._wrap("32", t)

    def bold(self, t: str) -> str:
        return self._wrap("1", t)

    def dim(self, t: str) -> str:
        return self._wrap("2", t)

    def mark(self, mark: str) -> str:
        return {OK: self.green, WARN: self.yellow, FAIL: self.red}.get(mark, self.dim)(mark)


def render(report: Report, *, color: bool = False, debug: bool = False) -> str:
    s = _Style(color)
    lines = [_verdict_line(report, s), ""]
    lines += _python(report, s, debug)
    lines += _ort(report, s, debug)
    lines += _torch(report, s)
    lines += _driver(report, s, debug)
    lines += _libraries(report, s, debug)
    lines += _tensorrt_rows(report, s)
    lines += _smoke(report, s, debug)
    lines += _devices(report, s, debug)
    lines += _model(report)
    lines += _problems(report, s, debug)
    if debug:
        lines += ["", s.bold("Timings (ms)"),
                  "  " + ", ".join(f"{k} {v:g}" for k, v in report.timings_ms.items())]
        if report.matrix_path:
            lines.append(f"  matrix: {_home(report.matrix_path)}")
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------------------------------
def _counts(findings: Sequence[Finding]) -> str:
    errors = sum(f.severity == "error" for f in findings)
    warnings = sum(f.severity == "warning" for f in findings)
    parts = []
    if errors:
        parts.append(f"{errors} error{'s' * (errors != 1)}")
    if warnings:
        parts.append(f"{warnings} warning{'s' * (warnings != 1)}")
    return ", ".join(parts)


def verdict_line(report: Report, *, color: bool = False) -> str:
    """The first line of the human report (the short report and the pytest header print it too)."""
    return _verdict_line(report, _Style(color))


def _verdict_line(report: Report, s: _Style) -> str:
    head = f"ortdoctor {__version__}: "
    ort = report.env.ort
    # an unreadable package directory leaves the version unknown: never "onnxruntime None"
    what = " ".join(x for x in (ort.active or "onnxruntime", ort.version if ort.installed else None) if x)
    if report.verdict == "fail":
        first = next(f for f in report.findings if f.severity == "error")
        return (head + s.red(s.bold(f"{FAIL} FAIL")) + f": {what} cannot use the GPU here "
                f"({_counts(report.findings)}; first: {first.id})")
    proof = " (the smoke session proved it)" if report.smoke is not None and report.smoke.ok else ""
    if report.outcome == "works-with-preload":
        return (head + s.yellow(s.bold(f"{WARN} WORKS ONLY WITH A PRELOAD")) + f": {what} falls back to the CPU "
                "unless its CUDA libraries are preloaded (`import ortdoctor.hook`; `ortdoctor hook install` makes it "
                f"permanent){proof}")
    if report.verdict == "warn":
        return (head + s.yellow(s.bold(f"{WARN} WARN")) + f": {what} works as is{proof}, with "
                f"{_counts(report.findings)}")
    return head + s.green(s.bold(f"{OK} OK")) + f": {what} works as is{proof}"


def _row(label: str, mark: str, text: str, s: _Style) -> str:
    return f"{s.bold(label.ljust(_LABEL))}{s.mark(mark) + ' ' if mark else ''}{text}"


def _home(path: str | None) -> str:
    """A path as printed: ``~`` for the home directory, control characters in a file name shown, not obeyed."""
    if not path:
        return ""
    home = os.path.expanduser("~")
    if home not in ("", "/") and path.startswith(home + os.sep):
        return terminal_safe("~" + path[len(home):])
    return terminal_safe(path)


def _short(path: str, report: Report, debug: bool) -> str:
    """A library path relative to its site directory (``…/nvidia/cu13/lib/x``) unless --debug."""
    if debug:
        return _home(path)
    for site in report.env.python.site_dirs:
        if site and path.startswith(site.rstrip(os.sep) + os.sep):
            return terminal_safe("…/" + path[len(site.rstrip(os.sep)) + 1:])
    return _home(path)


def _python(report: Report, s: _Style, debug: bool) -> list[str]:
    py = report.env.python
    extra = [py.platform]
    if py.libc:
        extra.append(py.libc)
    if py.venv:
        extra.append("venv")
    if py.conda_prefix:
        extra.append(f"conda {py.conda_prefix}")
    if py.container:
        extra.append("container")
    if py.wsl:
        extra.append("WSL2")
    out = [_row("Python", "", f"{py.version} {_home(py.executable)} ({', '.join(extra)})", s)]
    if debug:
        out += [" " * _LABEL + s.dim(f"site: {_home(d)}") for d in py.site_dirs]
    return out


def _ort(report: Report, s: _Style, debug: bool) -> list[str]:
    from ortdoctor.decide.build import is_cuda_build

    ort = report.env.ort
    if not ort.installed:
        rec = report.recommendation or "see the fix below"
        return [_row("onnxruntime", FAIL, "not installed", s), " " * _LABEL + f"for this machine: {s.bold(rec)}"]
    dists = [d for d in ort.distributions if not d.name.lower().startswith("onnxruntime-genai")]
    name = " ".join(x for x in (ort.active or ort.package_name or "onnxruntime", ort.version) if x)
    if report.env.python.unreadable and not (ort.package_dir and ort.is_gpu_build):
        mark, text = FAIL, f"{name} (what is installed cannot be read: see [path-unreadable])"
    elif is_cuda_build(ort):
        cudnn = f", cuDNN {ort.cudnn_major}" if ort.cudnn_major else ""
        mark, text = OK, f"{name} (CUDA {ort.cuda_version or '?'}{cudnn})"
    else:
        mark, text = FAIL, f"{name} (CPU build: no CUDA provider)"
    if len(dists) > 1:
        multi = next((f for f in report.findings if f.id == "ort-multiple-packages"), None)
        mark = WARN if multi is not None and multi.severity != "error" else FAIL
        site = os.path.normpath(os.path.dirname(ort.package_dir)) if ort.package_dir else None
        others = [d for d in dists if d.name != ort.active]
        if site and all(os.path.normpath(d.location) != site for d in others):
            text += "; also installed, shadowed: " + ", ".join(f"{d.name} {d.version} ({_home(d.location)})"
                                                             for d in others)
        else:
            text += "; also installed: " + ", ".join(f"{d.name} {d.version}" for d in others)
    out = [_row("onnxruntime", mark, text, s), " " * _LABEL + s.dim(_home(ort.package_dir))]
    if debug:
        for d in ort.distributions:
            owner = {True: "files on disk", False: "overwritten", None: "?"}[d.owns_files_on_disk]
            out.append(" " * _LABEL + s.dim(f"{d.name} {d.version}: {owner} ({_home(d.dist_info)})"))
        if ort.cuda_provider is not None:
            p = ort.cuda_provider
            needed = p.needed if isinstance(p, ElfInfo) else p.imports
            out.append(" " * _LABEL + s.dim("CUDA provider needs: " + ", ".join(needed)))
    return out


def _torch(report: Report, s: _Style) -> list[str]:
    t = report.env.torch
    if t is None:
        return [_row("PyTorch", "", s.dim("not installed"), s)]
    ids = {f.id for f in report.findings}
    mark = WARN if "torch-cuda-mismatch" in ids else OK
    detail = f"CUDA {t.cuda}" if t.cuda else "CPU build"
    if t.cudnn:
        detail += f", cuDNN {t.cudnn}"
    return [_row("PyTorch", mark, f"{t.version} ({detail})", s)]


def _driver(report: Report, s: _Style, debug: bool) -> list[str]:

    d = report.env.driver
    ids = {f.id for f in report.findings}
    if not d.available:
        reason = d.error or (d.error_kind.value if d.error_kind else "not available")
        return [_row("Driver/GPU", FAIL, f"no usable NVIDIA driver ({reason})", s)]
    driver_bad = ids & {"driver-too-old", "cuda-compat-on-unsupported-hw"}
    out = [_row("Driver/GPU", FAIL if "driver-too-old" in driver_bad else (WARN if driver_bad else OK),
                f"driver {d.version} (CUDA {d.cuda_version or '?'})", s)]
    dmap = report.devices
    why = dmap.visibility_note
    if not d.devices:
        out.append(" " * _LABEL + s.red(f"{FAIL} no GPU visible"))
    remapped = d.cuda_visible_devices is not None
    for dev in d.devices:
        mem = ""
        if dev.memory_total_mib is not None:
            mem = f", {dev.memory_total_mib} MiB" + (f" ({dev.memory_free_mib} free)" if dev.memory_free_mib is not None else "")
        ordinal = dmap.ordinal_of(dev.index)
        if ordinal is None:
            where = s.dim(" hidden by CUDA_VISIBLE_DEVICES")
        else:
            where = s.dim(f" = CUDA device {ordinal}") if remapped or debug else ""
        mode = f", {dev.compute_mode}" if dev.compute_mode not in (None, "default") else ""
        out.append(" " * _LABEL + f"GPU {dev.index}: {dev.name} (sm {dev.compute_capability or '?'}{mem}{mode}){where}")
    for c in dmap.devices:
        if c.device is None:
            out.append(" " * _LABEL + f"CUDA device {c.ordinal}: {c.mig or '?'} (a MIG instance NVML's list does not show)")
    if why and (debug or remapped):
        out.append(" " * _LABEL + s.dim(why))
    if dmap.order_note:
        out.append(" " * _LABEL + s.yellow(f"{WARN} {dmap.order_note}"))
    return out


_MARKS = {"ok": OK, "warn": WARN, "fail": FAIL, "info": INFO}


def _lib_text(row: LibraryRow, report: Report) -> str:
    lp = row.plan
    if row.state == "skipped":
        return f"skipped ({lp.skipped})"
    if row.state == "sublibrary-absent":
        return "not in this cuDNN (loaded only if its release has it)"
    if row.state == "other-major":
        return "only another major: " + ", ".join(os.path.basename(c.path) for c in lp.other_major[:3])
    if lp.chosen is None:
        return "not found"
    where = f"{lp.chosen.source}  {_short(lp.chosen.path, report, False)}"
    if lp.chosen.version:
        where = f"{lp.chosen.version}  " + where
    pick = row.default_loader
    if row.state == "loader-takes-other" and pick is not None:
        word = SOURCE_WORDS.get(pick.source, pick.source)
        return where + f"  (default loader: {word} {pick.version or 'version unknown'})"
    if row.state == "needs-preload":
        return where + "  (needs preload)"
    return where


def _libraries(report: Report, s: _Style, debug: bool) -> list[str]:
    plan = report.plan
    if plan is None:
        return []
    head = f"CUDA {plan.cuda_major}" + (f", cuDNN {plan.cudnn_major}" if plan.cudnn_major else "")
    if plan.directory is not None:
        head += f"; --directory {plan.directory!r}"
    out = [_row("Libraries", "", head, s)]
    rows = list(report.libraries)
    subs = [row.plan for row in rows if row.sublibrary]
    if not debug:
        # The cuDNN sub-libraries follow the main library: one summary line unless --debug.
        rows = [row for row in rows if not row.sublibrary]
    name_w = max((len(row.plan.name) for row in rows), default=0) + 2
    so_w = max((len(row.plan.soname) for row in rows), default=0) + 2
    for row in rows:
        lp = row.plan
        mark, text = _MARKS[row.status], _lib_text(row, report)
        kind = "" if lp.required else s.dim(" lazy")
        out.append(f"  {s.mark(mark)} {lp.name.ljust(name_w)}{lp.soname.ljust(so_w)}{text}{kind}")
        if debug:
            for c in lp.candidates:
                why = f" — {c.rejected}" if c.rejected else ""
                version = f" ({c.version})" if c.version else ""
                out.append(s.dim(f"      candidate [{c.source}] {_home(c.path)}{version}{why}"))
            for c in lp.other_major:
                out.append(s.dim(f"      other major [{c.source}] {_home(c.path)} — {c.rejected or ''}"))
    if subs and not debug:
        found = [lp for lp in subs if lp.chosen is not None]
        text = f"{len(found)} of {len(subs)} known cuDNN sub-libraries present"
        if len(found) < len(subs):
            text += " (cuDNN loads those of its own release)"
        out.append(s.dim(f"  {INFO} {text}; --debug lists them"))
    return out


def _smoke(report: Report, s: _Style, debug: bool) -> list[str]:
    sm = report.smoke
    if sm is None:
        return [_row("Smoke", "", s.dim(f"not run ({report.smoke_skipped or 'skipped'})"), s)]
    providers = list(getattr(sm, "providers", None) or [])
    timings = getattr(sm, "timings_ms", None) or {}
    if getattr(sm, "ok", False):
        t = format_timings(timings)
        row = smoke_provider(sm)
        plugin = f" ({row.label})" if row is not None and row.plugin else ""
        out = [_row("Smoke", OK, f"MatMul+Add+Relu ran on {providers[0] if providers else 'CUDA'}{plugin} "
                    f"(device {getattr(sm, 'device_id', 0)}); results correct", s)]
        if t:
            out.append(" " * _LABEL + s.dim(t))
        return out + _smoke_extra(report) + _placement(sm)
    if not getattr(sm, "ran", False):
        return [_row("Smoke", WARN, f"did not run: {terminal_safe(getattr(sm, 'error', None) or 'unknown reason')}", s)]
    where = f" (ran on {providers})" if providers else ""
    # The classified cause, not a slice of ORT's message: the finding below carries the raw text.
    causes = [c for c in getattr(sm, "causes", ()) or () if not getattr(c, "consequence", False)]
    # without a driver the session could not run, whatever the build's own failure looked like
    no_driver = any(getattr(c, "finding_id", "") == "driver-missing" for c in causes)
    out = [_row("Smoke", FAIL, "could not run on the GPU (no usable NVIDIA driver)" if no_driver else
                f"failed{where}", s)]
    titles: dict[str, str] = {f.id: f.title for f in report.findings}
    if causes:
        for cid in dict.fromkeys(getattr(c, "finding_id", "") for c in causes):
            out.append(" " * _LABEL + f"cause: {titles.get(cid) or _catalog_title(cid)}  " + s.dim(f"[{cid}]"))
    else:
        fid = getattr(sm, "finding_id", None) or "smoke-failed"
        out.append(" " * _LABEL + s.dim(f"ORT's error is under [{fid}] below"))
    if debug:
        err = terminal_safe(getattr(sm, "error", None) or "", multiline=True).strip().splitlines()
        out += [" " * _LABEL + s.dim(line) for line in err]
    if timings:
        out.append(" " * _LABEL + s.dim(format_timings(timings)))
    return out + _smoke_extra(report) + _placement(sm)


def _tensorrt_rows(report: Report, s: _Style) -> list[str]:
    """TensorRT and the plugin EPs, when there is anything to say (:mod:`ortdoctor.report.tensorrt`)."""
    from ortdoctor.report.tensorrt import plugin_rows, tensorrt_rows

    marks = {"ok": OK, "warn": WARN, "fail": FAIL, "info": INFO, "": ""}
    return [_row(label, marks[mark], text, s) for label, mark, text in (*tensorrt_rows(report), *plugin_rows(report))]


def _smoke_extra(report: Report) -> list[str]:
    from ortdoctor.report.tensorrt import smoke_lines

    return [" " * _LABEL + line for line in smoke_lines(report)]


def _placement(sm: object) -> list[str]:
    """``check --verbose``: where ORT placed each node of the smoke model, one line per provider."""
    placement = getattr(sm, "node_placement", None) or {}
    return [" " * _LABEL + f"nodes on {provider}: {', '.join(nodes)}" for provider, nodes in placement.items()]


def _catalog_title(finding_id: str) -> str:
    from ortdoctor.core.catalog import CATALOG

    entry = CATALOG.get(finding_id)
    return entry.title if entry is not None else finding_id


_TIMING_NAMES = {"first_run": "first run", "run": "steady run"}


def _ms(value: float) -> str:
    """At most one decimal (two below 1 ms, where one would say 0.1 for 0.086)."""
    if value >= 100:
        return f"{value:.0f}"
    if value >= 1:
        return f"{value:.1f}".removesuffix(".0")
    return f"{value:.2f}"


def format_timings(timings: dict[str, float]) -> str:
    """``session 242 ms, first run 55.6 ms, steady run 0.09 ms``; the JSON keeps full precision."""
    return ", ".join(f"{_TIMING_NAMES.get(k, k.replace('_', ' '))} {_ms(v)} ms" for k, v in timings.items())


def _devices(report: Report, s: _Style, debug: bool) -> list[str]:
    """``check --all-devices``: one line per CUDA ordinal with the NVML device behind it."""
    if not report.all_devices:
        return []
    if not report.device_smokes:
        return [_row("Devices", "", s.dim("no smoke session per device (" + (report.smoke_skipped or
                                                                              "no GPU visible") + ")"), s)]
    out = [_row("Devices", "", f"the smoke session on each of {len(report.device_smokes)} CUDA device(s)", s)]
    for ds in report.device_smokes:
        mark = {"ok": OK, "fell-back": FAIL, "failed": FAIL}.get(ds.result, WARN)
        c = ds.cuda
        if c is None:
            head = f"cuda:{ds.ordinal}  (no such device here)"
        else:
            nvml = f"GPU {c.nvml_index}" if c.nvml_index is not None else "GPU ?"
            dev = c.device
            facts = [f"sm {dev.compute_capability or '?'}" if dev else "sm ?"]
            if dev is not None and dev.memory_free_mib is not None:
                facts.append(f"{dev.memory_free_mib} MiB free")
            if dev is not None and dev.compute_mode not in (None, "default"):
                facts.append(str(dev.compute_mode))
            uuid = f" {c.uuid}" if c.uuid and debug else ""
            head = f"cuda:{ds.ordinal} = {nvml} {c.name}{uuid} ({', '.join(facts)})"
        sm = ds.smoke
        if ds.result == "ok":
            t = getattr(sm, "timings_ms", None) or {}
            tail = "ok" + (" — " + format_timings({k: v for k, v in t.items() if k in ("session", "run")})
                           if t else "")
        elif ds.result == "not-run":
            tail = f"not run: {terminal_safe(getattr(sm, 'error', None) or '?')}"
        else:
            causes = [c for c in getattr(sm, "causes", ()) or () if not getattr(c, "consequence", False)]
            cid = getattr(causes[0], "finding_id", "") if causes else ""
            tail = ("fell back to the CPU" if ds.result == "fell-back" else "failed") + (
                f": {_catalog_title(cid)} [{cid}]" if cid else " (ORT's error is in the findings below)")
        out.append(f"  {s.mark(mark)} {head}: {tail}")
    return out


def _model(report: Report) -> list[str]:
    if report.model is None:
        return []
    from ortdoctor.report.model_check import render_model

    # the model's names and the child's errors are the model file's and onnxruntime's text: shown, not obeyed
    return ["", *terminal_safe(render_model(report.model), multiline=True).splitlines()]


def _problems(report: Report, s: _Style, debug: bool) -> list[str]:
    # The model's findings are listed (with their fixes) in the Model section above.
    model_findings = set(getattr(report.model, "findings", ()) or ())
    problems = [f for f in report.findings if f.severity != "info" and f not in model_findings]
    notes = [f for f in report.findings if f.severity == "info" and f not in model_findings]
    out: list[str] = []
    if problems:
        theirs = [f for f in model_findings if f.severity != "info"]
        more = f"; {_counts(theirs)} of the model's above" if theirs else ""
        out += ["", s.bold(f"Problems ({_counts(problems)}{more})")]
        first = first_fix(report)
        if first.shown:
            ids = ", ".join(f.id for f in first.plan.fixed)
            head = (f"Fix: paste these lines into a shell, as they are: they fix {ids} at once (what "
                    "`ortdoctor fix --yes` runs).")
            out += ["", *wrap(head, _WIDTH)]
            out += ["    " + s.bold(line) for line in first.text().splitlines()]
        for f in problems:
            out += _finding(f, s, first)
    elif model_findings and report.verdict != "ok":
        out += ["", s.bold("Problems: ") + "only the model's (listed under Model above)"]
    elif report.verdict == "ok":
        out += ["", s.green("No problems found.")]
    if notes and debug:
        out += ["", s.bold("Notes")]
        for f in notes:
            out += _finding(f, s, None)
    elif notes:
        # one line: notes explain, they do not block; -v (or `explain ID`) shows each in full
        ids = ", ".join(f.id for f in notes)
        out += ["", fill(f"{INFO} {len(notes)} note{'s' if len(notes) > 1 else ''}: {ids}  (-v shows them; "
                          "ortdoctor explain ID)", _WIDTH, subsequent_indent="  ", break_long_words=True)]
    return out


def _finding(f: Finding, s: _Style, first: FirstFix | None) -> list[str]:
    """A finding; its fix as a block of command lines (each one whole on its own line, to paste) and, apart
    from it, the prose. ``first``: the report's first fix block, which may hold its commands."""
    covered = first is not None and first.covers(f)
    mark = {"error": FAIL, "warning": WARN}.get(f.severity, INFO)
    out = ["", f"{s.mark(mark)} {s.bold(f.title)}  {s.dim('[' + f.id + ']')}"]
    for para in terminal_safe(f.detail, multiline=True).splitlines():  # quotes child processes, paths
        out += wrap(para, _WIDTH, initial_indent="    ", subsequent_indent="      ") or [""]
    if not f.fix:
        return out
    # node, log and path text inside a fix is shown, not obeyed (quoting already escapes commands)
    commands, prose = split_fix(terminal_safe(f.fix, multiline=True), bool(f.commands))
    if covered and first is not None:
        commands, prose = [], first.prose(f, prose)
        out.append("    " + s.green("fix: ") + "in the Fix block above")
    elif commands:
        out.append("    " + s.green("fix:"))
        out += ["        " + s.bold(line) for line in commands]
    if commands or covered:
        # the prose apart from the commands (wrapped: nothing in it is pasted)
        out += [s.dim(part) for line in prose
                for part in wrap(line, _WIDTH, initial_indent="    ", subsequent_indent="      ")]
    elif prose:
        out.append("    " + s.green("fix: ") + s.bold(prose[0]))
        out += ["         " + s.bold(line) for line in prose[1:]]
    return out
