"""`ortdoctor fleet merge` on real reports, in every shape a cluster hands them back.

The reports are the real output of `ortdoctor check --json --no-smoke` on differently broken "nodes"
(tests/support/fleet_reports.py); the logs around them are built the way each tool writes its lines:
kubectl's `--prefix` (`[pod/NAME/CONTAINER] `), `--timestamps` (RFC 3339 with nanoseconds), the CRI log
files kubelet keeps (`TIMESTAMP STREAM P|F CONTENT`, lines over 16 KiB split into `P` parts: containerd's
default `max_container_log_line_size` is 16384), Docker's json-file driver (`{"log": ..., "stream": ...,
"time": ...}` per line), `srun --label` (`TASK: `).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ortdoctor.fleet.merge import InputError, merge, read_nodes
from ortdoctor.fleet.render import render_markdown, render_text, to_json
from tests.fuzz.bounds import EXAMPLES, FUZZ
from tests.support import fleet_reports
from tests.support.fleet_reports import NODES

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.realwheels


@pytest.fixture(scope="module")
def reports() -> dict[str, str]:
    return fleet_reports.k8s_reports()


def ortdoctor(*args: str, stdin: str | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ortdoctor", *args], input=stdin, capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def compact(text: str) -> str:
    return json.dumps(json.loads(text), separators=(",", ":"))


def by_label(fleet: Any) -> dict[str, Any]:
    return {n.label: n for n in fleet.nodes}


def kubectl_prefixed(reports: dict[str, str], order: list[int] | None = None, *, timestamps: bool = True) -> str:
    """`kubectl logs -l app=ortdoctor --prefix --timestamps`: each pod's lines with its prefix, the pods'
    lines interleaved in ``order`` (indices into the pods, repeated; default round-robin)."""
    streams = []
    for i, (name, text) in enumerate(sorted(reports.items())):
        pod = f"ortdoctor-{name[-1]}x7k2"
        lines = text.splitlines()
        stamped = [f"2026-12-01T10:00:{i:02d}.{j:09d}Z {line}" if timestamps else line for j, line in enumerate(lines)]
        streams.append([f"[pod/{pod}/ortdoctor] {line}" for line in stamped])
    out: list[str] = []
    cursors = [0] * len(streams)
    schedule = order if order is not None else list(range(len(streams))) * max(len(s) for s in streams)
    for k in schedule:
        k %= len(streams)
        if cursors[k] < len(streams[k]):
            out.append(streams[k][cursors[k]])
            cursors[k] += 1
    for k, s in enumerate(streams):  # whatever the schedule left
        out.extend(s[cursors[k]:])
    return "\n".join(out) + "\n"


def assert_the_six_nodes(fleet: Any) -> None:
    nodes = by_label(fleet)
    assert set(nodes) == {n.name for n in NODES}
    assert nodes["gpu-a"].status == "warn"
    assert {n: nodes[n].status for n in nodes if n != "gpu-a"} == dict.fromkeys(
        ("gpu-b", "gpu-c", "gpu-d", "gpu-e", "gpu-f"), "fail")
    groups = {f.id: set(f.nodes) for f in fleet.findings}
    assert groups["driver-too-old"] == {"gpu-b"}
    assert groups["ort-cpu-only"] == {"gpu-c"}
    assert groups["ort-multiple-packages"] == {"gpu-d"}
    assert groups["cuda-major-mismatch"] == {"gpu-e"}
    assert groups["driver-missing"] == {"gpu-f"}


# --------------------------------------------------------------------------------------------------
# One report per file, a directory of them
# --------------------------------------------------------------------------------------------------
def test_a_directory_of_reports(tmp_path: Path, reports: dict[str, str]) -> None:
    for name, text in reports.items():
        (tmp_path / f"{name}.json").write_text(text)
    fleet = merge([str(tmp_path)])
    assert_the_six_nodes(fleet)
    assert len(fleet.nodes) == 6

    # the host section of each report names its node and pod
    nodes = by_label(fleet)
    assert nodes["gpu-b"].host["k8s_node_name"] == "gpu-b"
    assert nodes["gpu-b"].host["k8s_pod_name"] == "ortdoctor-bx7k2"
    assert nodes["gpu-b"].host["gpu_uuids"] == ["GPU-gpu-b-0"]
    assert nodes["gpu-f"].host["gpu_uuids"] == []

    # what differs: the driver, with what the build needs, and the values only failing nodes have
    drift = {d.field: d for d in fleet.drift}
    driver = drift["driver"]
    values = {v.value: set(v.nodes) for v in driver.values}
    assert values == {"580.159.04": {"gpu-a", "gpu-c", "gpu-d", "gpu-e"}, "535.183.01": {"gpu-b"},
                      "none (library-not-found)": {"gpu-f"}}
    assert driver.note is not None
    assert "1 node on driver 535.x while onnxruntime-gpu 1.31.1 (CUDA 13.0) needs >= 580: gpu-b" in driver.note
    assert "no usable driver: gpu-f" in driver.note
    assert set(driver.only_on_failing) == {"535.183.01", "none (library-not-found)"}
    onnxruntime = {v.value: set(v.nodes) for v in drift["onnxruntime"].values}
    assert onnxruntime["onnxruntime 1.31.1"] == {"gpu-c"}
    assert onnxruntime["onnxruntime-gpu 1.31.1"] == {"gpu-a", "gpu-b", "gpu-e", "gpu-f"}
    cudnn = {v.value: set(v.nodes) for v in drift["cudnn"].values}
    assert cudnn == {"9.19.0.56": {"gpu-a", "gpu-b", "gpu-f"},  # the nvidia-cudnn-cu13 wheel's version
                     "not found": {"gpu-e"}}
    assert drift["cudnn"].only_on_failing == ("not found",)

    text = render_text(fleet)
    assert text.startswith("ortdoctor fleet: 6 nodes: 1 warn, 5 fail\n")
    assert "driver-too-old  (1 node: gpu-b)" in text
    assert "535.183.01: 1 node (gpu-b)  <- only on failing nodes" in text


def test_the_cli_exit_codes_and_formats(tmp_path: Path, reports: dict[str, str]) -> None:
    for name, text in reports.items():
        (tmp_path / f"{name}.json").write_text(text)
    proc = ortdoctor("fleet", "merge", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("ortdoctor fleet: 6 nodes")
    assert proc.stderr == ""

    data = json.loads(ortdoctor("fleet", "merge", "--json", str(tmp_path)).stdout)
    assert data["fleet_schema_version"] == 1
    assert data["counts"] == {"nodes": 6, "ok": 0, "warn": 1, "fail": 5, "error": 0, "timeout": 0, "unreachable": 0}
    assert {n["label"] for n in data["nodes"]} == {n.name for n in NODES}
    assert next(f for f in data["findings"] if f["id"] == "driver-too-old")["nodes"] == ["gpu-b"]

    md = ortdoctor("fleet", "merge", "--format", "markdown", str(tmp_path)).stdout
    assert md.startswith("### ortdoctor fleet: 6 nodes: 1 warn, 5 fail")
    assert "| error | <code>driver-too-old</code> | 1: gpu-b |" in md

    # a fleet of only the good node: warn -> 0, or 1 with --strict
    good = tmp_path / "good"
    good.mkdir()
    (good / "a.json").write_text(reports["gpu-a"])
    assert ortdoctor("fleet", "merge", str(good)).returncode == 0
    assert ortdoctor("fleet", "merge", "--strict", str(good)).returncode == 1
    assert ortdoctor("fleet", "--strict", "merge", str(good)).returncode == 1


def test_merge_does_not_import_ray() -> None:
    code = ("import sys, ortdoctor.fleet.merge, ortdoctor.fleet.drift, ortdoctor.fleet.render, "
            "ortdoctor.cli.fleet; assert 'ray' not in sys.modules, 'ray imported'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------------------------------
# Many reports in one file or stream
# --------------------------------------------------------------------------------------------------
def test_json_lines(tmp_path: Path, reports: dict[str, str]) -> None:
    path = tmp_path / "reports.jsonl"
    path.write_text("".join(compact(t) + "\n" for t in reports.values()))
    assert_the_six_nodes(merge([str(path)]))


def test_pretty_reports_one_after_another_from_stdin(reports: dict[str, str]) -> None:
    # what `srun ... ortdoctor check --json > reports.jsonl` gives when the tasks do not overlap
    proc = ortdoctor("fleet", "merge", "--json", "-", stdin="".join(reports.values()))
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["counts"]["nodes"] == 6


def test_srun_label_with_lines_interleaved(tmp_path: Path, reports: dict[str, str]) -> None:
    # `srun --label`: each line is "TASK: line", the tasks' lines interleaved as they arrive
    streams = [[f"{i}: {line}" for line in text.splitlines()] for i, text in enumerate(reports.values())]
    lines = [s[j] for j in range(max(map(len, streams))) for s in streams if j < len(s)]
    path = tmp_path / "reports.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert_the_six_nodes(merge([str(path)]))


def test_kubectl_logs_prefix_and_timestamps_interleaved(reports: dict[str, str]) -> None:
    log = kubectl_prefixed(reports)
    proc = ortdoctor("fleet", "merge", "-", stdin=log)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("ortdoctor fleet: 6 nodes: 1 warn, 5 fail")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.lists(st.integers(min_value=0, max_value=2), min_size=0, max_size=600))
def test_any_interleaving_of_three_pods(reports: dict[str, str], order: list[int]) -> None:
    three = {k: reports[k] for k in ("gpu-a", "gpu-b", "gpu-c")}
    read = read_nodes(["-"], stdin=_bytes(kubectl_prefixed(three, order, timestamps=False)))
    assert sorted(n.host["name"] for n in read.nodes) == ["gpu-a", "gpu-b", "gpu-c"]
    assert sorted(n.hint or "" for n in read.nodes) == ["ortdoctor-ax7k2", "ortdoctor-bx7k2", "ortdoctor-cx7k2"]


# What a pod prints, for the reader to find: a pretty report, one cut off, one with an invalid token, a
# compact one, an error instead of a report, a stray "{", a line that only looks like a timestamp
_OUTPUTS = ("pretty", "cut", "invalid", "compact", "error", "brace", "date")


def _pod_output(kind: str, report: str) -> list[str]:
    pretty = json.dumps(json.loads(report), indent=2).splitlines()
    if kind == "cut":
        return pretty[:len(pretty) // 2]
    if kind == "invalid":
        return [line.replace('"verdict": "fail"', '"verdict": fail') for line in pretty]
    if kind == "compact":
        return [compact(report)]
    if kind == "error":
        return ["sh: ortdoctor: not found"]
    if kind == "brace":
        return ["{", "Traceback (most recent call last):"]
    if kind == "date":
        return ["2026-12-01T10:00:00Z is when this pod started"]
    return pretty


@st.composite
def _kubectl_logs(draw: Any, reports: dict[str, str]) -> tuple[str, int]:
    """`kubectl logs --prefix [--timestamps] [-f]` of some pods: their lines in runs or round the pods in
    turn, timestamps of varying length (RFC 3339 drops the fraction's trailing zeros), maybe CRLF."""
    texts = list(reports.values())
    pods = []
    for p in range(draw(st.integers(1, 4))):
        kinds = draw(st.lists(st.sampled_from(_OUTPUTS), min_size=1, max_size=3))
        lines = [line for kind in kinds for line in _pod_output(kind, texts[draw(st.integers(0, len(texts) - 1))])]
        pods.append([(f"[pod/ortdoctor-{p}{'x' * p}/ortdoctor] ", line) for line in lines])
    stamps = draw(st.sampled_from(("none", "fixed", "varying")))
    cursors = [0] * len(pods)
    out: list[str] = []
    while any(c < len(pod) for c, pod in zip(cursors, pods, strict=True)):
        live = [k for k, pod in enumerate(pods) if cursors[k] < len(pod)]
        take = draw(st.sampled_from(("round", "run")))
        for _ in range(draw(st.integers(1, 400))):
            ks = live if take == "round" else [draw(st.sampled_from(live))]
            for k in ks:
                if cursors[k] < len(pods[k]):
                    prefix, line = pods[k][cursors[k]]
                    n = len(out)
                    if stamps == "none":
                        stamp = ""
                    elif stamps == "fixed":
                        stamp = f"2026-12-01T10:00:00.{n:09d}Z "
                    else:
                        stamp = f"2026-12-01T10:00:00.{n % 1000:03d}".rstrip("0").rstrip(".") + "Z "
                    out.append(prefix + stamp + line)
                    cursors[k] += 1
    end = "\r\n" if draw(st.booleans()) and draw(st.booleans()) else "\n"
    return end.join(out) + end, draw(st.sampled_from((1 << 20, 8192, 777)))


def _events(text: str, block: int, one_by_one: bool, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What the reader makes of ``text``: every report and broken report (in order), its counts."""
    import io

    from ortdoctor.fleet import lines as lines_module

    events: list[Any] = []

    def on_report(data: Any, where: str, hint: str | None) -> None:
        events.append(("report", where, hint, json.dumps(data, sort_keys=True)))

    def on_broken(where: str, why: str, hint: str | None) -> None:
        events.append(("broken", where, why, hint))

    monkeypatch.setattr(lines_module, "_BLOCK", block)
    if one_by_one:  # the line path alone, line after line
        reader = lines_module.LineReader("log", on_report, on_broken)
        all_lines = text.split("\n")[:-1]
        for n, line in enumerate(all_lines, 1):
            reader.line(n, line)
        reader.finish(len(all_lines))
    else:
        reader = lines_module.read_stream("log", io.StringIO(text, newline=""), on_report=on_report,
                                          on_broken=on_broken)
    return [events, reader.reports, reader.broken, reader.other, reader.not_reports, reader.first_other,
            reader.why_not, reader.said, sorted(reader.answered)]


@settings(FUZZ, max_examples=min(EXAMPLES, 60))
@given(data=st.data())
def test_pod_lines_taken_together_read_as_line_by_line(reports: dict[str, str], data: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # kubectl's prefixed lines are taken a stretch at a time (all of one pod's lines of the stretch
    # together): the reports, broken reports, other lines and their order are those of reading them one by one
    text, block = data.draw(_kubectl_logs(reports))
    assert _events(text, block, False, monkeypatch) == _events(text, block, True, monkeypatch)


def test_reports_cut_off_at_the_end_in_the_order_they_began(reports: dict[str, str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # two pods in turn, each ending in a cut-off report; pod 1's began first although pod 0 had a report
    # open earlier: the broken nodes come in the order their reports began, as read line by line
    first, second = (json.dumps(json.loads(t), indent=2).splitlines() for t in list(reports.values())[:2])
    pod0 = first + second[:40]
    pod1 = ["waiting"] * (len(first) - 5) + second[:45]
    lines = [f"[pod/{name}/ortdoctor] 2026-12-01T10:00:00.{n:09d}Z {line}"
             for n, pair in enumerate(zip(pod0, pod1, strict=True)) for name, line in zip(("p0", "p1"), pair, strict=True)]
    text = "\n".join(lines) + "\n"
    events = _events(text, 1 << 20, False, monkeypatch)
    assert events == _events(text, 1 << 20, True, monkeypatch)
    assert [e[0] for e in events[0]] == ["report", "broken", "broken"]
    assert "[pod/p1/ortdoctor]" in events[0][1][1]


def _bytes(text: str) -> Any:
    import io

    return io.BytesIO(text.encode())


def test_cri_log_file_with_partial_lines(tmp_path: Path, reports: dict[str, str]) -> None:
    # kubelet's own file (/var/log/pods/.../0.log): a line longer than containerd's
    # max_container_log_line_size (16 KiB by default; 4 KiB here, as some clusters set it) is written as
    # "P" parts and a final "F"; the stderr stream shares the file
    size = 4096
    lines = ["2026-12-01T10:00:00.000000001Z stderr F starting ortdoctor check"]
    for n, text in enumerate(reports.values()):
        one = compact(text)
        assert len(one) > size
        parts = [one[i:i + size] for i in range(0, len(one), size)]
        for k, part in enumerate(parts):
            tag = "F" if k == len(parts) - 1 else "P"
            lines.append(f"2026-12-01T10:00:{n:02d}.{k:09d}Z stdout {tag} {part}")
    path = tmp_path / "0.log"
    path.write_text("\n".join(lines) + "\n")
    read = read_nodes([str(path)])
    assert len(read.nodes) == 6
    assert read.notes == [f"{path}: skipped 1 other line"]


def test_docker_json_file_log(tmp_path: Path, reports: dict[str, str]) -> None:
    # Docker's json-file driver: one JSON record per line of output, the line in "log" with its newline
    text = reports["gpu-b"]
    records = [json.dumps({"log": line + "\n", "stream": "stdout", "time": f"2026-12-01T10:00:00.{i:09d}Z"})
               for i, line in enumerate(text.splitlines())]
    path = tmp_path / "container-json.log"
    path.write_text("\n".join(records) + "\n")
    fleet = merge([str(path)])
    assert [(n.label, n.status) for n in fleet.nodes] == [("gpu-b", "fail")]


def test_docker_compose_style_prefix(tmp_path: Path, reports: dict[str, str]) -> None:
    # any constant prefix nobody announced (`docker compose logs`: "SERVICE-N  | ") works as well
    out = []
    for i, text in enumerate(list(reports.values())[:2]):
        out += [f"ortdoctor-{i + 1}  | {line}" for line in text.splitlines()]
    path = tmp_path / "compose.log"
    path.write_text("\n".join(out) + "\n")
    assert len(merge([str(path)]).nodes) == 2


def test_gzip(tmp_path: Path, reports: dict[str, str]) -> None:
    path = tmp_path / "reports.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write("".join(compact(t) + "\n" for t in reports.values()))
    assert_the_six_nodes(merge([str(path)]))


# --------------------------------------------------------------------------------------------------
# What is not a report
# --------------------------------------------------------------------------------------------------
def test_a_cut_off_report_is_a_node_in_error(reports: dict[str, str]) -> None:
    cut = dict(reports)
    cut["gpu-c"] = "\n".join(reports["gpu-c"].splitlines()[:40]) + "\n"  # the pod was killed mid-write
    proc = ortdoctor("fleet", "merge", "--json", "-", stdin=kubectl_prefixed(cut))
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    bad = [n for n in data["nodes"] if n["status"] == "error"]
    assert len(bad) == 1
    assert bad[0]["label"] == "ortdoctor-cx7k2"  # the pod's name, from kubectl's prefix
    assert "cut off at the end of the input" in bad[0]["reason"]
    assert data["counts"]["nodes"] == 6


def test_garbage_is_refused_with_a_clear_message(tmp_path: Path, reports: dict[str, str]) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("node-1 looks fine\nnode-2 rebooted\n")
    proc = ortdoctor("fleet", "merge", str(text))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"{text}: no ortdoctor report found" in proc.stderr
    assert "'node-1 looks fine'" in proc.stderr
    assert "Traceback" not in proc.stderr

    proc = ortdoctor("fleet", "merge", sys.executable)  # an ELF executable
    assert proc.returncode == 2
    assert "a binary file" in proc.stderr

    proc = ortdoctor("fleet", "merge", str(tmp_path / "missing.json"))
    assert proc.returncode == 2
    assert "cannot be read" in proc.stderr

    empty = tmp_path / "empty"
    empty.mkdir()
    proc = ortdoctor("fleet", "merge", str(empty))
    assert proc.returncode == 2
    assert "an empty directory" in proc.stderr

    # JSON that is something else: a structured log line, and a fleet report fed back in
    other = tmp_path / "other.jsonl"
    other.write_text('{"level": "info", "msg": "started"}\n')
    proc = ortdoctor("fleet", "merge", str(other))
    assert proc.returncode == 2
    assert "not an ortdoctor check report" in proc.stderr
    (tmp_path / "a.json").write_text(reports["gpu-a"])
    fleet_json = tmp_path / "fleet.json"
    fleet_json.write_text(ortdoctor("fleet", "merge", "--json", str(tmp_path / "a.json")).stdout)
    proc = ortdoctor("fleet", "merge", str(fleet_json))
    assert proc.returncode == 2
    assert "a fleet report (ortdoctor fleet --json), not one node's report" in proc.stderr

    # a report whose compact line is broken JSON is a node in error, not a silent skip
    broken = tmp_path / "broken.jsonl"
    broken.write_text(compact(reports["gpu-a"])[:-200] + "\n" + compact(reports["gpu-b"]) + "\n")
    fleet = merge([str(broken)])
    assert [n.status for n in fleet.nodes] == ["error", "fail"]
    assert "not valid JSON" in (fleet.nodes[0].reason or "")


def test_a_directory_skips_files_without_reports(tmp_path: Path, reports: dict[str, str]) -> None:
    (tmp_path / "gpu-a.json").write_text(reports["gpu-a"])
    (tmp_path / "README").write_text("collected by the nightly job\n")
    (tmp_path / ".hidden.json").write_text("not read")
    read = read_nodes([str(tmp_path)])
    assert len(read.nodes) == 1
    assert read.notes == [f"skipped 1 file holding no report: {tmp_path / 'README'} (1 line of something else, "
                          "the first: 'collected by the nightly job')"]
    with pytest.raises(InputError, match="no ortdoctor report"):
        read_nodes([str(tmp_path / "README")])


def test_the_same_report_twice_is_counted_once(tmp_path: Path, reports: dict[str, str]) -> None:
    (tmp_path / "a.json").write_text(reports["gpu-a"])
    (tmp_path / "b.json").write_text(reports["gpu-a"])
    fleet = merge([str(tmp_path)])
    assert [n.label for n in fleet.nodes] == ["gpu-a"]
    assert fleet.notes == ("left out 1 report seen twice (the same node, the same run)",)


def test_a_report_without_host_section(tmp_path: Path, reports: dict[str, str]) -> None:
    # what an ortdoctor before schema_version 2 writes: no "host"; the file names the node
    old = json.loads(reports["gpu-c"])
    del old["host"]
    old["schema_version"] = 1
    path = tmp_path / "node-17.json"
    path.write_text(json.dumps(old, indent=2))
    fleet = merge([str(path)])
    assert [(n.label, n.status, n.schema_version) for n in fleet.nodes] == [(f"{path}:1", "fail", 1)]


def test_two_tasks_on_one_slurm_node_get_distinct_names(tmp_path: Path) -> None:
    node = NODES[0]
    texts = [fleet_reports.run_check(node, {"SLURMD_NODENAME": "gpu-s1", "SLURM_JOB_ID": "4242",
                                            "SLURM_PROCID": str(i)}) for i in (0, 1)]
    path = tmp_path / "reports.jsonl"
    path.write_text("".join(texts))
    fleet = merge([str(path)])
    assert sorted(n.label for n in fleet.nodes) == ["gpu-s1 (task:0)", "gpu-s1 (task:1)"]
    assert all(n.host["slurm_job_id"] == "4242" for n in fleet.nodes)


def test_renderers_cut_long_node_lists(tmp_path: Path, reports: dict[str, str]) -> None:
    # 60 copies of one report from 60 Slurm tasks: names are cut short, the JSON keeps them all
    node = json.loads(reports["gpu-b"])
    lines = []
    for i in range(60):
        node["host"] = {**node["host"], "name": f"n{i:03d}", "slurm_procid": i}
        node["timings_ms"] = {**node["timings_ms"], "total": i}
        lines.append(json.dumps(node))
    path = tmp_path / "many.jsonl"
    path.write_text("\n".join(lines) + "\n")
    fleet = merge([str(path)])
    text = render_text(fleet)
    assert "driver-too-old  (60 nodes: n000, n001, n002, n003, n004, n005, n006, n007 and 52 more)" in text
    assert "... and 10 more (--json lists every node)" in text
    assert len(to_json(fleet)["findings"][0]["nodes"]) == 60
    assert "and 55 more" in render_markdown(fleet)
