"""The whole fix-convergence grid: broken venvs from the real wheels, each printed fix pasted as it stands.

    python scripts/convergence.py                    # every scenario (about 7 GB of wheels, fetched once)
    python scripts/convergence.py --ci               # only those the test suite runs
    python scripts/convergence.py cpu-only old-1.20-cuda13-wheels --keep
    python scripts/convergence.py --out results.md --json results.json

What one scenario does, what "the primary fix" is and when it counts as converged:
tests/convergence/harness.py. The wheels are cached in ``.testenvs/convergence-wheels/``
(``$ORTDOCTOR_CONVERGENCE_WHEELS``). Exit status 1 when a scenario does not converge.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.convergence import harness
from tests.convergence.scenarios import BY_NAME, SCENARIOS

_WORKSPACE = re.compile(r"/\S*?/ortdoctor-converge-[^/\s]+/(activated-venv|ortdoctor-venv|venv|proj/\.venv)")


def _short(text: str | None) -> str:
    """The scenario's throwaway venv as ``<venv>``, the venv it activates beside it as ``<activated>``,
    ortdoctor's own venv as ``<ortdoctor-venv>`` (each run has another temporary path)."""
    names = {"activated-venv": "<activated>", "ortdoctor-venv": "<ortdoctor-venv>"}
    return _WORKSPACE.sub(lambda m: names.get(m.group(1), "<venv>"), text or "")


def _cell(text: str | None) -> str:
    return _short(text).replace("|", "\\|").replace("\n", " ")


def table(outcomes: list[harness.Outcome]) -> str:
    rows = ["| scenario | found | rounds | outcome | primary fix as printed (the first block, pasted) | seconds |",
            "|---|---|---|---|---|---|"]
    for o in outcomes:
        found = o.primary_id or "—"
        # one code span per pasted line (the block is pasted whole, a line each)
        fix = "<br>".join(f"`{_cell(line)}`" for line in o.pasted.splitlines() if line.strip()) if o.pasted else "—"
        rows.append(f"| {o.scenario} | {found} | {o.rounds} | {_cell(o.summary())} | {fix} | {o.seconds:.0f} |")
    return "\n".join(rows)


def details(outcomes: list[harness.Outcome]) -> str:
    """For each scenario that did not converge: the fix text, what pip did, what check said after."""
    out = []
    for o in outcomes:
        if o.converged:
            continue
        out.append(f"### {o.scenario}\n\n{o.summary()}\n")
        if o.fix:
            out.append("Fix as printed:\n\n```text\n" + _short(o.fix) + "\n```\n")
        if o.fix_output:
            out.append("What the pasted line did (tail):\n\n```text\n" + _short(o.fix_output.strip()[-2500:]) + "\n```\n")
        if o.after is not None:
            lines = [f"{f['severity']}: {f['id']}: {f.get('title', '')}\n  fix: {f.get('fix')}" for f in o.after.findings
                     if f["severity"] != "info"]
            out.append("Check after:\n\n```text\n" + _short("\n".join(lines)) + "\n```\n")
        if o.later_fixes:
            out.append("Later rounds pasted:\n\n```text\n" + _short("\n".join(o.later_fixes)) + "\n```\n")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="scenarios to run (default: all)")
    ap.add_argument("--ci", action="store_true", help="only the scenarios the test suite runs")
    ap.add_argument("--keep", action="store_true", help="keep each scenario's venv (path on stderr)")
    ap.add_argument("--out", type=Path, help="write the markdown table (and details) here")
    ap.add_argument("--json", type=Path, help="write every outcome as JSON here")
    ap.add_argument("--list", action="store_true", help="list the scenarios and exit")
    ap.add_argument("--rounds", type=int, default=3,
                    help="where one round does not converge, paste the next fix up to this many rounds in all, "
                         "to say how many it takes (default 3; the verdict stays 'not converged')")
    args = ap.parse_args(argv)
    if args.list:
        for s in SCENARIOS:
            print(f"{s.name:28} {'ci ' if s.ci else '   '}{s.what}")
        return 0
    unknown = [n for n in args.names if n not in BY_NAME]
    if unknown:
        ap.error(f"unknown scenario(s): {', '.join(unknown)} (--list)")
    chosen = [BY_NAME[n] for n in args.names] if args.names else [s for s in SCENARIOS if s.ci or not args.ci]
    if not harness.pypi_reachable():
        print("convergence: PyPI is not reachable; the grid needs it (wheels are fetched once, then cached)",
              file=sys.stderr)
        return 2
    started = time.monotonic()
    commit = subprocess.run(["git", "-C", str(harness.ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="ortdoctor-wheel-") as tmp:
        wheel = harness.build_ortdoctor_wheel(Path(tmp))
        outcomes = []
        for s in chosen:
            print(f"convergence: {s.name}: fetching wheels", file=sys.stderr, flush=True)
            harness.fetch_scenario(s)
            print(f"convergence: {s.name}: running", file=sys.stderr, flush=True)
            o = harness.run_scenario(s, wheel, keep=args.keep, extra_rounds=args.rounds - 1)
            print(f"convergence: {s.name}: {o.summary()} ({o.seconds:.0f} s)", file=sys.stderr, flush=True)
            outcomes.append(o)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python scripts/convergence.py" + "".join(f" {shlex.quote(a)}" for a in (argv or sys.argv[1:]))
    head = (f"Command: `{command}` · date: {when} · commit: `{commit}` · Python {sys.version.split()[0]} · "
            f"{sum(o.converged for o in outcomes)}/{len(outcomes)} converged in one round · "
            f"{time.monotonic() - started:.0f} s in all\n")
    text = head + "\n" + table(outcomes) + "\n"
    extra = details(outcomes)
    if extra:
        text += "\n" + extra
    print(text)
    if args.out:
        args.out.write_text(text)
    if args.json:
        args.json.write_text(json.dumps([dataclasses.asdict(o) | {"converged": o.converged, "rounds": o.rounds} for o in outcomes],
                                        indent=1))
    return 0 if all(o.converged for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
