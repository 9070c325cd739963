"""Each layout gets the installer that works: a ``--user`` copy beside a venv is removed by the interpreter
the venv was made from, a ``--user`` install on a plain Python stays in the user site, a ``--target``
copy is moved aside (never ``rm -rf``), a uv venv uses uv; the merged plan and ``fix --yes`` do the same."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ortdoctor.core.facts import Finding, OrtDistribution
from ortdoctor.core.shell import render_all
from ortdoctor.decide.fix_plan import plan_fix
from ortdoctor.decide.fixes import Installer, step
from ortdoctor.probes.platform import probe_python
from tests.test_diagnose import SITE, healthy_env, one, ort_cpu, ort_gpu, python_info, run

USER_SITE = "/home/u/.local/lib/python3.11/site-packages"
BASE = "/usr/bin/python3.11"


def _user_cpu_beside_venv_gpu() -> list[Finding]:
    gpu = ort_gpu().distributions[0]
    cpu = OrtDistribution("onnxruntime", "1.31.1", USER_SITE, f"{USER_SITE}/onnxruntime-1.31.1.dist-info",
                          owns_files_on_disk=True)
    py = python_info(site_dirs=(SITE, USER_SITE), user_site=USER_SITE, base_executable=BASE)
    return run(healthy_env(python=py, ort=ort_gpu(distributions=(gpu, cpu))))


def test_a_user_copy_shadowed_by_a_venv_is_removed_by_the_base_interpreter() -> None:
    f = one(_user_cpu_beside_venv_gpu(), "ort-multiple-packages")
    assert f.severity == "warning"
    assert [s.python for s in f.steps] == [BASE]
    assert f.fix is not None
    assert f.fix.splitlines()[0] == f"{BASE} -m pip uninstall -y onnxruntime"
    assert "/venv/bin/python" not in f.fix.splitlines()[0]  # the venv's pip refuses it, exit 0
    # fix --yes runs the same, with that interpreter
    plan = plan_fix([f])
    assert plan.argvs(Installer("/venv/bin/python")) == [[BASE, "-m", "pip", "uninstall", "-y", "onnxruntime"]]


def test_without_a_known_base_interpreter_the_user_copy_is_moved_aside() -> None:
    gpu = ort_gpu().distributions[0]
    cpu = OrtDistribution("onnxruntime", "1.31.1", USER_SITE, f"{USER_SITE}/onnxruntime-1.31.1.dist-info")
    py = python_info(site_dirs=(SITE, USER_SITE), user_site=USER_SITE, base_executable=None)
    f = one(run(healthy_env(python=py, ort=ort_gpu(distributions=(gpu, cpu)))), "ort-multiple-packages")
    # the venv's pip would answer "outside environment" and do nothing: the directories are moved aside
    assert f.fix is not None
    assert "/venv/bin/python -m pip uninstall" not in f.fix
    assert [c.kind for c in f.commands] == ["move"]
    assert f.commands[0].argv[-1] == f"{USER_SITE}/ortdoctor-backup"


def test_a_user_install_on_a_plain_python_is_replaced_in_the_user_site() -> None:
    cpu = ort_cpu(distributions=(OrtDistribution("onnxruntime", "1.31.1", USER_SITE,
                                                 f"{USER_SITE}/onnxruntime-1.31.1.dist-info"),),
                  package_dir=f"{USER_SITE}/onnxruntime")
    py = python_info(executable="/usr/bin/python3", venv=None, site_dirs=(USER_SITE, SITE), user_site=USER_SITE)
    f = one(run(healthy_env(python=py, ort=cpu)), "ort-cpu-only")
    installs = [s for s in f.steps if s.verb == "install"]
    assert installs
    assert all(s.args[0] == "--user" for s in installs)
    assert f.fix is not None
    assert " -m pip install --user " in f.fix
    # in a venv no --user (pip refuses it there)
    f = one(run(healthy_env(ort=ort_cpu())), "ort-cpu-only")
    assert all("--user" not in s.args for s in f.steps)


def test_a_target_copy_is_moved_with_its_dist_info_and_the_plan_runs_the_move(tmp_path: Path) -> None:
    target = "/srv/my dir $(touch x)/tgt"
    gpu = ort_gpu().distributions[0]
    cpu = OrtDistribution("onnxruntime", "1.31.1", target, f"{target}/onnxruntime-1.31.1.dist-info")
    env = healthy_env(ort=replace(ort_cpu(), distributions=(cpu, gpu), package_dir=f"{target}/onnxruntime"))
    f = one(run(env), "ort-multiple-packages")
    assert f.severity == "error"
    assert [c.kind for c in f.commands] == ["move"]
    assert f.commands[0].argv == (f"{target}/onnxruntime", f"{target}/onnxruntime-1.31.1.dist-info",
                                  f"{target}/ortdoctor-backup")
    assert f.fix is not None
    assert "rm " not in f.fix
    assert render_all(f.commands) == [
        "mkdir -p -- '/srv/my dir $(touch x)/tgt/ortdoctor-backup' && mv -- '/srv/my dir $(touch x)/tgt/onnxruntime' "
        "'/srv/my dir $(touch x)/tgt/onnxruntime-1.31.1.dist-info' '/srv/my dir $(touch x)/tgt/ortdoctor-backup'"]
    plan = plan_fix([f])
    assert not plan.empty
    assert plan.fixed == (f,)
    assert plan.argvs(Installer("/venv/bin/python")) == [
        ["mkdir", "-p", "--", f"{target}/ortdoctor-backup"],
        ["mv", "--", f"{target}/onnxruntime", f"{target}/onnxruntime-1.31.1.dist-info", f"{target}/ortdoctor-backup"]]
    # on Windows `fix --yes` leaves the move to the user (no mv there); the text shows PowerShell
    assert plan_fix([f], windows=True).manual == (f,)


def _uv_venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nimplementation = CPython\nuv = 0.13.9\n"
                                     "include-system-site-packages = false\nversion_info = 3.11.2\n")
    return venv


def test_a_uv_venv_finds_uv_where_its_installer_puts_it(tmp_path: Path) -> None:
    from ortdoctor.probes.interpreter import Interpreter

    venv = _uv_venv(tmp_path)
    home = tmp_path / "home"
    uv = home / ".local" / "bin" / "uv"
    uv.parent.mkdir(parents=True)
    uv.write_text("#!/bin/sh\n")
    uv.chmod(0o755)
    it = Interpreter(str(venv / "bin" / "python"), "3.11.2", "CPython", "linux-x86_64", "x86_64", "linux",
                     str(venv), "/usr", (), other=True)
    py = probe_python(interpreter=it, environ={"PATH": str(tmp_path / "empty"), "HOME": str(home)}, sys_path=())
    assert py.venv_creator == "uv"
    assert py.uv_on_path == str(uv)
    assert py.has_pip is False
    assert Installer.of(py).argvs([step("install", "x")]) == [
        [str(uv), "pip", "install", "--python", str(venv / "bin" / "python"), "x"]]
    # not a uv venv: uv is not looked for outside PATH
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\n")
    py = probe_python(interpreter=it, environ={"PATH": str(tmp_path / "empty"), "HOME": str(home)}, sys_path=())
    assert py.venv_creator is None
    assert py.uv_on_path is None


def test_a_pixi_or_poetry_environment_names_its_project_command_too(tmp_path: Path) -> None:
    from ortdoctor.probes.interpreter import Interpreter

    project = tmp_path / "proj"
    for prefix, manager in ((project / ".pixi" / "envs" / "default", "pixi"), (project / ".venv", "poetry"),
                            (tmp_path / "conda-env", "conda"), (tmp_path / "plain", None)):
        prefix.mkdir(parents=True)
        if manager == "poetry":
            (project / "poetry.lock").write_text("")
        if manager == "conda":
            (prefix / "conda-meta").mkdir()
        it = Interpreter(str(prefix / "bin" / "python"), "3.11.2", "CPython", "linux-x86_64", "x86_64", "linux",
                         str(prefix), "/usr", (), other=True)
        py = probe_python(interpreter=it, environ={"PATH": str(tmp_path / "empty")}, sys_path=())
        assert py.env_manager == manager, prefix
    steps = [step("uninstall", "-y", "onnxruntime"), step("install", "onnxruntime-gpu[cuda,cudnn]==1.31.1")]
    text, commands = Installer("/p/.pixi/envs/default/bin/python", manager="pixi").fix(steps, "why")
    # the pip commands work at once; the note names the project's own command, which keeps the change
    assert [c.argv[:3] for c in commands] == [("/p/.pixi/envs/default/bin/python", "-m", "pip")] * 2
    assert text.splitlines()[-1] == ("# this environment belongs to a pixi project: to keep the change there, run in "
                                     "the project pixi remove --pypi onnxruntime && pixi add --pypi "
                                     "'onnxruntime-gpu[cuda,cudnn]==1.31.1' instead (the next `pixi install` puts "
                                     "back what the lock file says)")
    assert "poetry add 'onnxruntime-gpu[cuda,cudnn]==1.31.1'" in Installer("/p/.venv/bin/python",
                                                                          manager="poetry").fix(steps)[0]
    assert "# " not in Installer("/v/bin/python").fix(steps)[0]  # no manager, no note


def test_the_merged_plan_of_a_pixi_or_poetry_environment_carries_the_project_note_once() -> None:
    """`ortdoctor fix` (and the report's first block) merge the findings' steps: the project's note names
    the merged change, once, as a comment after the commands, in the listing `fix` prints."""
    from ortdoctor.report.fix import render_plan
    from tests.test_diagnose import full_plan, lib
    from tests.test_report import make_report

    findings = [Finding("ort-multiple-packages", "error", "t", "", "x", (step("uninstall", "-y", "onnxruntime"),)),
                Finding("numpy-abi-mismatch", "error", "t", "", "x", (step("install", "numpy<2"),))]
    plan = plan_fix(findings)
    assert plan.note(Installer("/p/.pixi/envs/default/bin/python", manager="pixi")) == (
        "this environment belongs to a pixi project: to keep the change there, run in the project pixi remove "
        "--pypi onnxruntime && pixi add --pypi 'numpy<2' instead (the next `pixi install` puts back what the lock "
        "file says)")
    assert plan.note(Installer("/v/bin/python")) == ""
    # `ortdoctor fix`'s listing: the commands, then the note as a comment line, once
    gpu = ort_gpu().distributions[0]
    cpu = OrtDistribution("onnxruntime", "1.31.1", USER_SITE, f"{USER_SITE}/onnxruntime-1.31.1.dist-info")
    py = python_info(site_dirs=(SITE, USER_SITE), user_site=USER_SITE, base_executable=BASE, env_manager="poetry")
    report = make_report(healthy_env(python=py, ort=ort_gpu(distributions=(gpu, cpu))),
                         full_plan(curand=lib("curand", "libcurand.so.10", None)))
    installer = Installer.of(report.env.python)
    plan = plan_fix(report.findings)
    listing = render_plan(report, plan, installer).splitlines()
    commands = render_all(plan.lines(installer))
    at = listing.index(f"  {commands[0]}")
    assert listing[at:at + len(commands) + 1] == [*(f"  {c}" for c in commands), f"  # {plan.note(installer)}"]
    assert sum("poetry" in line for line in listing) == 1
    # the line that runs them is ortdoctor's own interpreter's, not the `ortdoctor` first on PATH
    assert listing[-1] == "  /venv/bin/python -m ortdoctor fix --yes"
    listing = render_plan(report, plan, installer, python_option="/venv/bin/python",
                          ortdoctor_python="/opt/my tools/bin/python").splitlines()
    assert listing[-1] == "  '/opt/my tools/bin/python' -m ortdoctor fix --python /venv/bin/python --yes"


def test_a_copy_in_the_base_site_packages_seen_through_system_site_packages() -> None:
    """A venv made with --system-site-packages sees the base interpreter's site-packages; the venv's pip
    does not remove what is there ("outside environment"), the base interpreter's does."""
    system = "/usr/lib/python3/dist-packages"
    gpu = ort_gpu().distributions[0]
    cpu = OrtDistribution("onnxruntime", "1.31.1", system, f"{system}/onnxruntime-1.31.1.dist-info")
    py = python_info(site_dirs=(SITE, system), prefix="/venv", base_executable=BASE)
    f = one(run(healthy_env(python=py, ort=ort_gpu(distributions=(gpu, cpu)))), "ort-multiple-packages")
    assert [(s.python, s.args) for s in f.steps] == [(BASE, ("-y", "onnxruntime"))]
    # inside the venv's own prefix: its own pip, as before
    cpu_in = OrtDistribution("onnxruntime", "1.31.1", "/venv/lib/python3.11/other/site-packages",
                             "/venv/lib/python3.11/other/site-packages/onnxruntime-1.31.1.dist-info")
    f = one(run(healthy_env(python=py, ort=ort_gpu(distributions=(gpu, cpu_in)))), "ort-multiple-packages")
    assert [s.python for s in f.steps] == [None]
