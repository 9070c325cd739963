"""The report as one collapsible Markdown block to paste into a GitHub issue (`check --format markdown`).

The block is a single ``<details>`` element whose summary is the verdict, so a bug report stays short
until a maintainer opens it. Inside: every version ortdoctor saw (Python, each onnxruntime
distribution, PyTorch, driver, GPUs, NVIDIA wheels, each library), the smoke session, and every
finding with its detail and fix.

People paste this into public trackers, so the user's home directory becomes ``~`` and the user name
``<user>`` wherever they appear (paths, error texts, environment variables), and the block says so.
Redaction is applied to each piece of text before it is escaped for its Markdown context, so
``<user>`` shows as written both in code and in table cells. Returns a string; nothing here prints.
"""

from __future__ import annotations

import getpass
import html
import os
import re
from collections.abc import Iterable, Mapping

from ortdoctor._version import __version__
from ortdoctor.core.facts import Finding
from ortdoctor.core.record import record
from ortdoctor.core.shell import split_fix
from ortdoctor.decide.loader_view import SOURCE_WORDS, LibraryRow
from ortdoctor.report.fix_block import first_fix
from ortdoctor.report.model import Report
from ortdoctor.report.text import format_timings

__all__ = ["REDACTION_NOTE", "Redactor", "redactor_for", "render"]

REDACTION_NOTE = "home directory and user name redacted"

# Account names that identify nobody (images and CI runners use them) and that also occur as ordinary
# words or path parts: left alone outside the home directory, so /opt/conda or .../lib stay readable.
_GENERIC_USERS = frozenset({
    "root", "user", "users", "admin", "home", "ubuntu", "debian", "runner", "app", "conda", "docker",
    "jovyan", "nvidia", "cuda", "python", "lib", "bin", "opt", "usr", "local", "default", "nobody",
})
_MARK = {"error": "✘", "warning": "⚠", "info": "ℹ"}


@record
class Redactor:
    """Replaces home directories with ``~`` and user names with ``<user>`` in a piece of text."""

    homes: tuple[str, ...] = ()
    users: tuple[str, ...] = ()

    def __call__(self, text: str | None) -> str:
        if not text:
            return ""
        for home in self.homes:
            # the home itself, followed by a separator or the end of a path (not /home/bob2 for /home/bob)
            text = re.sub(re.escape(home) + r"(?=[/\\]|$|[^\w.-])", "~", text, flags=re.IGNORECASE)
        for user in self.users:
            text = re.sub(r"(?<![A-Za-z0-9])" + re.escape(user) + r"(?![A-Za-z0-9])", "<user>", text,
                          flags=re.IGNORECASE)
        return text


def redactor_for(environ: Mapping[str, str] | None = None) -> Redactor:
    """The redactor for this process's user: ``$HOME`` (``%USERPROFILE%``) as given and resolved, and the
    user name from the environment, the password database and the home directory's last part."""
    env = os.environ if environ is None else environ
    homes: set[str] = set()
    for key in ("HOME", "USERPROFILE"):
        value = env.get(key, "").rstrip("/\\")
        if value:
            homes.add(value)
            homes.add(os.path.realpath(value).rstrip("/\\"))
    if environ is None:
        homes.add(os.path.expanduser("~").rstrip("/\\"))
    homes = {h for h in homes if h and len(h.strip("/\\")) > 0 and h not in ("/", "\\")}

    users: set[str] = {env.get(k, "") for k in ("USER", "LOGNAME", "USERNAME")}
    if environ is None:
        try:
            users.add(getpass.getuser())
        except Exception:  # no name for this uid (containers run with arbitrary uids)
            pass
    users |= {os.path.basename(h) for h in homes}
    users = {u for u in users if len(u) >= 3 and u.lower() not in _GENERIC_USERS}
    # longest first, so /home/bob/x is replaced before a shorter home that is its prefix
    return Redactor(homes=tuple(sorted(homes, key=len, reverse=True)),
                    users=tuple(sorted(users, key=len, reverse=True)))


# --------------------------------------------------------------------------------------------------
class _Md:
    """Markdown escaping for each context, redacting every piece of text first."""

    def __init__(self, redact: Redactor) -> None:
        self.redact = redact

    def text(self, value: object) -> str:
        """Inline text (table cells, list items): HTML-escaped, pipes escaped for tables, one line."""
        s = html.escape(self.redact(str(value)), quote=False)
        return s.replace("|", "\\|").replace("\r", "").replace("\n", "<br>")

    def code(self, value: object) -> str:
        """An inline code span, safe inside a table cell."""
        s = self.redact(str(value)).replace("\r", "").replace("\n", " ")
        ticks = "`" * (max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
        pad = " " if s.startswith("`") or s.endswith("`") else ""
        return f"{ticks}{pad}{s.replace('|', chr(92) + '|')}{pad}{ticks}"

    def block(self, value: object, lang: str = "text") -> list[str]:
        """A fenced code block (longer fence than any backtick run inside)."""
        s = self.redact(str(value)).replace("\r", "").rstrip("\n")
        fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
        return [f"{fence}{lang}", *s.splitlines(), fence]


def render(report: Report, *, redact: Redactor | None = None, command: str = "ortdoctor check --format markdown",
           ) -> str:
    """The whole report as one ``<details>`` block (with a trailing newline)."""
    md = _Md(redact if redact is not None else redactor_for())
    summary = html.escape(md.redact(f"ortdoctor report: {_verdict(report)}"), quote=False)
    lines = [f"<details><summary>{summary}</summary>", ""]
    lines.append(f"ortdoctor {__version__} · `{command}` · {REDACTION_NOTE}")
    lines.append("")
    lines += _facts(report, md)
    lines += _libraries(report, md)
    lines += _smoke(report, md)
    lines += _findings(report, md)
    lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
def _count(findings: Iterable[Finding], severity: str, word: str) -> str:
    n = sum(f.severity == severity for f in findings)
    return f"{n} {word}{'s' * (n != 1)}" if n else ""


def _counts(findings: Iterable[Finding]) -> str:
    fs = list(findings)
    parts = [_count(fs, "error", "error"), _count(fs, "warning", "warning"), _count(fs, "info", "note")]
    return ", ".join(p for p in parts if p)


def _verdict(report: Report) -> str:
    ort = report.env.ort
    what = " ".join(x for x in (ort.active or ort.package_name or "onnxruntime", ort.version if ort.installed else None)
                    if x)
    counts = _counts(report.findings)
    if report.verdict == "fail":
        first = next((f.id for f in report.findings if f.severity == "error"), "")
        return f"✘ FAIL: {what} cannot use the GPU here ({counts}; first: {first})"
    proof = ", proved by the smoke session" if _smoke_ok(report) else ""
    if report.outcome == "works-with-preload":
        return f"⚠ WORKS ONLY WITH A PRELOAD: {what} falls back to the CPU unless its CUDA libraries are preloaded{proof} ({counts})"
    if report.verdict == "warn":
        return f"⚠ WARN: {what} works as is{proof} ({counts})"
    return f"✔ OK: {what} works as is{proof}" + (f" ({counts})" if counts else "")


def _smoke_ok(report: Report) -> bool:
    return report.smoke is not None and bool(getattr(report.smoke, "ok", False))


def _row(name: str, value: str) -> str:
    return f"| {name} | {value} |"


def _facts(report: Report, md: _Md) -> list[str]:
    from ortdoctor.decide.build import is_cuda_build

    env = report.env
    py = env.python
    rows = ["| | |", "|---|---|"]
    flags = [x for x in (py.libc, "venv" if py.venv else "", f"conda {py.conda_prefix}" if py.conda_prefix else "",
                         "container" if py.container else "", "WSL2" if py.wsl else "") if x]
    rows.append(_row("Python", md.text(f"{py.version} {py.implementation}, {py.platform} ({py.machine})"
                                       + (f", {', '.join(flags)}" if flags else ""))))
    rows.append(_row("executable", md.code(py.executable)))
    if py.multiprocessing_start_method:
        rows.append(_row("multiprocessing", md.text(py.multiprocessing_start_method)))

    ort = env.ort
    if not ort.installed:
        rows.append(_row("onnxruntime", "not installed"))
        if report.recommendation:
            rows.append(_row("for this machine", md.code(report.recommendation)))
    else:
        if is_cuda_build(ort):
            cudnn = f", cuDNN {ort.cudnn_major}" if ort.cudnn_major else ""
            build = f"CUDA {ort.cuda_version or '?'}{cudnn}"
        else:
            build = "CPU build, no CUDA provider"
        if env.python.unreadable and not (ort.package_dir and ort.is_gpu_build):
            build = "what is installed cannot be read: see path-unreadable"
        name = " ".join(x for x in (ort.active or ort.package_name or "onnxruntime", ort.version) if x)
        rows.append(_row("onnxruntime", md.text(f"{name} ({build})")))
        rows.append(_row("package dir", md.code(ort.package_dir or "?")))
    for d in ort.distributions:
        owner = {True: "its files are on disk", False: "its files were overwritten", None: "ownership unknown"}
        rows.append(_row("distribution", md.text(f"{d.name} {d.version} ({owner[d.owns_files_on_disk]}"
                                                 + (f", installer {d.installer}" if d.installer else "") + ") ")
                         + md.code(d.location)))

    t = env.torch
    if t is None:
        rows.append(_row("PyTorch", "not installed"))
    else:
        detail = f"CUDA {t.cuda}" if t.cuda else "CPU build"
        if t.cudnn:
            detail += f", cuDNN {t.cudnn}"
        rows.append(_row("PyTorch", md.text(f"{t.version} ({detail}) ") + md.code(t.location)))

    drv = env.driver
    if drv.available:
        rows.append(_row("NVIDIA driver", md.text(f"{drv.version} (CUDA {drv.cuda_version or '?'})")))
    else:
        reason = drv.error or (drv.error_kind.value if drv.error_kind else "not available")
        rows.append(_row("NVIDIA driver", md.text(f"not usable: {reason}")))
    for dev in drv.devices:
        mem = f", {dev.memory_total_mib} MiB" if dev.memory_total_mib is not None else ""
        rows.append(_row(f"GPU {dev.index}", md.text(f"{dev.name} (sm {dev.compute_capability or '?'}{mem})")))
    for key, value in (("CUDA_VISIBLE_DEVICES", drv.cuda_visible_devices),
                       ("NVIDIA_VISIBLE_DEVICES", drv.nvidia_visible_devices)):
        if value is not None:
            rows.append(_row(key, md.code(value)))

    for w in env.nvidia_wheels:
        rows.append(_row("NVIDIA wheel", md.text(f"{w.name} {w.version} ") + md.code(w.location)))

    sysinfo = env.system
    ld = [sd.path for sd in sysinfo.ld_library_path]
    rows.append(_row("LD_LIBRARY_PATH", " ".join(md.code(p) for p in ld) if ld else "(unset)"))
    for key, value in (("CONDA_PREFIX", sysinfo.conda_prefix), ("CUDA_HOME", sysinfo.cuda_home),
                       ("CUDA_PATH", sysinfo.cuda_path), ("CUDNN_PATH", sysinfo.cudnn_path)):
        if value:
            rows.append(_row(key, md.code(value)))
    return [*rows, ""]


_MARKS = {"ok": "✔", "warn": "⚠", "fail": "✘", "info": "ℹ"}


def _library_note(row: LibraryRow) -> str:
    lp = row.plan
    pick = row.default_loader
    if row.state == "skipped":
        return f"skipped: {lp.skipped}"
    if row.state == "other-major":
        return "only another major"
    if row.state in ("not-found", "sublibrary-absent"):
        return "not found"
    if row.state == "loader-takes-other" and pick is not None:
        return f"default loader: {SOURCE_WORDS.get(pick.source, pick.source)} {pick.version or 'version unknown'}"
    if row.state == "needs-preload":
        return "needs preload"
    return ""


def _libraries(report: Report, md: _Md) -> list[str]:
    plan = report.plan
    if plan is None:
        return []
    head = f"CUDA {plan.cuda_major}" + (f", cuDNN {plan.cudnn_major}" if plan.cudnn_major else "")
    if plan.directory is not None:
        head += f", --directory {plan.directory!r}"
    out = [f"**Libraries** ({md.text(head)})", "",
           "| | library | soname | version | source | path | note |", "|---|---|---|---|---|---|---|"]
    for row in report.libraries:
        lp = row.plan
        mark, note = _MARKS[row.status], _library_note(row)
        if not lp.required:
            note = ", ".join(x for x in (note, "loaded lazily") if x)
        c = lp.chosen
        if c is None and lp.other_major:
            path = " ".join(md.code(o.path) for o in lp.other_major[:3])
        else:
            path = md.code(c.path) if c else ""
        out.append(f"| {mark} | {md.text(lp.name)} | {md.code(lp.soname)} | {md.text(c.version or '') if c else ''} "
                   f"| {md.text(c.source) if c else ''} | {path} | {md.text(note)} |")
    return [*out, ""]


def _smoke(report: Report, md: _Md) -> list[str]:
    sm = report.smoke
    if sm is None:
        return [f"**Smoke session**: not run ({md.text(report.smoke_skipped or 'skipped')})", ""]
    providers = ", ".join(getattr(sm, "providers", None) or ()) or "none"
    timings = getattr(sm, "timings_ms", None) or {}
    if getattr(sm, "ok", False):
        t = "; " + format_timings(timings) if timings else ""
        return [f"**Smoke session**: ✔ MatMul+Add+Relu ran on {md.text(providers)} "
                f"(device {getattr(sm, 'device_id', 0)}), results correct{md.text(t)}", ""]
    status = getattr(sm, "exit_status", None)
    out = [f"**Smoke session**: ✘ {'failed' if getattr(sm, 'ran', False) else 'did not run'} "
           f"(providers: {md.text(providers)}"
           + (f", child exit {md.text(status)}" if status else "") + ")"]
    error = (getattr(sm, "error", None) or "").strip()
    if error:
        out += ["", *md.block("\n".join(error.splitlines()[-20:]))]
    return [*out, ""]


def _findings(report: Report, md: _Md) -> list[str]:
    if not report.findings:
        return ["**Findings**: none"]
    out = [f"**Findings** ({_counts(report.findings)})"]
    first = first_fix(report)
    if first.shown:
        ids = ", ".join(md.code(f.id) for f in first.plan.fixed)
        out += ["", f"fix for {ids} at once (what `ortdoctor fix --yes` runs), to paste into a shell:", "",
                *md.block(first.text(), "sh")]
    for f in report.findings:
        out += ["", f"{_MARK.get(f.severity, 'ℹ')} **{md.text(f.title)}** {md.code(f.id)} ({f.severity})", ""]
        if f.detail:
            out += md.block(f.detail)
        if not f.fix:
            continue
        commands, prose = split_fix(f.fix, bool(f.commands))
        if first.covers(f):
            prose = first.prose(f, prose)
            out += ["", "fix: in the block above" + (": " + md.text(" ".join(prose)) if prose else "")]
        elif commands:
            out += ["", "fix:", "", *md.block("\n".join(commands), "sh")]
            if prose:
                out += ["", md.text(" ".join(prose))]
        else:
            out += ["", "fix:", "", *md.block(f.fix, "")]
    return out
