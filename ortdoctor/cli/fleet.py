"""`ortdoctor fleet`: check every node of a Ray cluster, or merge the reports nodes wrote elsewhere.

``ortdoctor fleet --ray ADDRESS`` runs the check on each node (:mod:`ortdoctor.fleet.ray_runner`, the
only place Ray is imported); ``ortdoctor fleet merge PATH...`` reads reports gathered by Kubernetes,
Slurm or anything else (:mod:`ortdoctor.fleet.merge`). Both print one fleet report; the exit code is
the worst node's. Progress and errors go to stderr, the report alone to stdout.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import click

from ortdoctor.core import exitcodes
from ortdoctor.core.terminal import terminal_safe

_FORMATS = ["text", "json", "markdown", "prometheus"]


def _output_options(f: Callable[..., Any]) -> Callable[..., Any]:
    # --debug is read by ortdoctor.cli.crash (a traceback instead of the one-line internal error)
    f = click.option("--debug", is_flag=True, expose_value=False, help="Show the traceback of an internal error.")(f)
    f = click.option("--strict", is_flag=True, help="Exit 1 when a node warns, too.")(f)
    f = click.option("--format", "fmt", type=click.Choice(_FORMATS), default=None,
                     help="text (default), json (docs/fleet.md describes it), markdown for an issue or "
                     "a job summary, or prometheus (one gauge per node and finding, for a textfile collector).")(f)
    f = click.option("--json", "as_json", is_flag=True, help="Same as --format json.")(f)
    return f


def _usage_error(message: str) -> None:
    # it names files (a directory's, chosen by whoever wrote them) and quotes Ray and the input: shown, not obeyed
    click.echo(f"ortdoctor: error: {terminal_safe(message)}", err=True)
    sys.exit(exitcodes.USAGE)


def _pick_format(as_json: bool, fmt: str | None, parent: dict[str, Any] | None = None) -> str:
    parent = parent or {}
    as_json = as_json or bool(parent.get("as_json"))
    fmt = fmt or parent.get("fmt")
    if as_json and fmt not in (None, "json"):
        _usage_error(f"--json and --format {fmt} contradict each other")
    return "json" if as_json else (fmt or "text")


def _emit(fleet: Any, fmt: str, strict: bool) -> None:
    from ortdoctor.fleet.model import exit_code

    if fmt == "json":
        from ortdoctor.fleet.render import dumps

        click.echo(dumps(fleet))
    elif fmt == "markdown":
        from ortdoctor.fleet.render import render_markdown

        click.echo(render_markdown(fleet), nl=False)
    elif fmt == "prometheus":
        from ortdoctor.fleet.render import render_prometheus

        click.echo(render_prometheus(fleet), nl=False)
    else:
        from ortdoctor.fleet.render import render_text

        click.echo(render_text(fleet), nl=False)
    sys.exit(exitcodes.FAIL if exit_code(fleet, strict=strict) else exitcodes.OK)


class _Progress:
    """``12/40 nodes done`` on stderr: rewritten in place on a terminal, a line every few seconds else."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last = 0.0
        self.bad = 0

    def __call__(self, done: int, total: int, node: Any) -> None:
        if node.status in ("fail", "unreachable", "timeout", "error"):
            self.bad += 1
        line = f"ortdoctor fleet: {done}/{total} nodes done, {self.bad} failing or without a report"
        now = time.monotonic()
        if self.tty:
            click.echo("\r" + line + ("\n" if done == total else ""), err=True, nl=False)
        elif done == total or now - self.last >= 5.0:
            click.echo(line, err=True)
            self.last = now


@click.group("fleet", invoke_without_command=True,
             help="Check every node of a cluster, or merge the reports its nodes wrote: which nodes cannot use "
             "the GPU, why, and what differs between good and bad nodes.\n\n"
             "\b\n"
             "  ortdoctor fleet --ray auto              every node of the Ray cluster\n"
             "  ortdoctor fleet merge reports/          reports gathered elsewhere\n"
             "  kubectl logs -l app=ortdoctor --prefix --tail=-1 | ortdoctor fleet merge -")
@click.option("--ray", "ray_address", metavar="ADDRESS",
              help="Run the check on every alive node of this Ray cluster: auto (the running one), local (start "
              "one here), or ray://HOST:10001 (Ray Client).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=120.0, show_default=True,
              help="Seconds one node's check may take; past it the node is reported as timed out.")
@click.option("--connect-timeout", type=click.FloatRange(min=0, min_open=True), default=30.0, show_default=True,
              help="Seconds Ray has to connect to the cluster; past it the command ends with Ray's reason.")
@click.option("--start-timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              help="Seconds a node has to start a first no-op task (runtime_env setup counts); past it the node "
              "is reported as unreachable.")
@click.option("--all-devices", is_flag=True, help="Check every GPU of each node (check --all-devices).")
@click.option("--no-smoke", is_flag=True,
              help="Inspect only, no smoke session (no CUDA context on GPUs busy serving).")
@click.option("--python", "python", metavar="PATH",
              help="The serving environment's Python on the nodes (default: the Ray worker's own); it needs "
              "ortdoctor installed.")
@click.option("--gpu-nodes-only", is_flag=True,
              help="Leave out nodes where Ray counts no GPU (a CPU-only head); listed in the notes.")
@click.option("--runtime-env", "runtime_env", metavar="JSON",
              help="Run the checks in this Ray runtime_env (JSON), e.g. the serving deployment's.")
@click.option("--ship", is_flag=True,
              help="Send this ortdoctor along to the nodes (Ray runtime_env py_modules): no node needs it installed.")
@click.option("--save-reports", "reports_dir", type=click.Path(file_okay=False), default=None,
              help="Also write each node's full report into this directory (for `fleet merge` later).")
@_output_options
@click.pass_context
def command(ctx: click.Context, ray_address: str | None, connect_timeout: float, timeout: float,
            start_timeout: float, all_devices: bool,
            no_smoke: bool, python: str | None, gpu_nodes_only: bool, runtime_env: str | None, ship: bool,
            reports_dir: str | None, as_json: bool, fmt: str | None, strict: bool) -> None:
    if ctx.invoked_subcommand is not None:
        if ray_address is not None:
            _usage_error("--ray and `fleet merge` do not go together: run one or the other")
        ctx.obj = {"as_json": as_json, "fmt": fmt, "strict": strict}
        return
    if ray_address is None:
        _usage_error("say where the nodes are: `ortdoctor fleet --ray auto` (a Ray cluster) or "
                     "`ortdoctor fleet merge PATH...` (reports written by the nodes)")
        return
    out_fmt = _pick_format(as_json, fmt)
    env: dict[str, Any] | None = None
    if runtime_env is not None:
        try:
            env = json.loads(runtime_env)
        except ValueError as exc:
            _usage_error(f"--runtime-env is not JSON: {exc}")
        if not isinstance(env, dict):
            _usage_error("--runtime-env must be a JSON object")

    from ortdoctor.fleet.drift import summarize
    from ortdoctor.fleet.ray_runner import ConnectTimeout, FleetRunError, RayNotInstalled, run_on_ray

    try:
        result = run_on_ray(ray_address, timeout=timeout, start_timeout=start_timeout, all_devices=all_devices,
                            no_smoke=no_smoke, python=python, gpu_nodes_only=gpu_nodes_only, runtime_env=env,
                            progress=_Progress(), reports_dir=reports_dir, connect_timeout=connect_timeout,
                            ship=ship)
    except RayNotInstalled as exc:
        _usage_error(str(exc))
        return
    except ConnectTimeout as exc:
        # Ray's connecting thread cannot be stopped, and its exit handlers would wait for it: end here
        click.echo(f"ortdoctor: error: {terminal_safe(exc)}", err=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exitcodes.USAGE)
    except FleetRunError as exc:
        _usage_error(str(exc))
        return
    notes = [*result.notes, f"checked over Ray in {result.seconds:.1f} s"]
    if reports_dir is not None:
        notes.append(f"each node's full report is in {reports_dir}/")
    _emit(summarize(result.nodes, notes=notes), out_fmt, strict)


@command.command("merge", help="Merge reports of `ortdoctor check --json` into one fleet report. PATH: files, "
                 "directories, or - for standard input; one JSON object, JSON lines, or logs holding them "
                 "(kubectl logs --prefix/--timestamps, container runtime logs, srun --label), gzip or not.")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@_output_options
@click.pass_context
def merge_command(ctx: click.Context, paths: tuple[str, ...], as_json: bool, fmt: str | None, strict: bool) -> None:
    from ortdoctor.fleet.merge import InputError, merge

    parent = ctx.obj if isinstance(ctx.obj, dict) else {}
    out_fmt = _pick_format(as_json, fmt, parent)
    try:
        fleet = merge(list(paths))
    except InputError as exc:
        _usage_error(str(exc))
        return
    _emit(fleet, out_fmt, strict or bool(parent.get("strict")))
