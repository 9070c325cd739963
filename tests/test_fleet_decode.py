"""`fleet merge` reads a fleet of one image without decoding the same text again for every node, and
gives exactly what decoding each report whole gives. (How fast: bench/bench_fleet_merge.py.)

The reports are the real output of `ortdoctor check --json --no-smoke` (tests/support/fleet_reports.py),
varied per node the way a fleet varies: the host section, the time taken, the timings.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from ortdoctor.fleet.decode import ReportDecoder
from ortdoctor.fleet.drift import summarize
from ortdoctor.fleet.merge import merge
from ortdoctor.fleet.model import node_from_report
from tests.support import fleet_reports

pytestmark = pytest.mark.realwheels


@pytest.fixture(scope="module")
def reports() -> dict[str, str]:
    return fleet_reports.k8s_reports()


def _fleet(reports: dict[str, str], n: int) -> list[dict[str, Any]]:
    rng = random.Random(7)
    base = [json.loads(t) for t in reports.values()]
    out = []
    for i in range(n):
        rep = json.loads(json.dumps(base[i % len(base)]))
        rep["host"] = {**rep.get("host", {}), "name": f"node-{i:03d}", "hostname": f"ortdoctor-{i:03d}",
                       "k8s_pod_name": f"ortdoctor-{rng.getrandbits(24):06x}"}
        rep["taken_at"] = f"2026-12-01T10:{i // 60:02d}:{i % 60:02d}.000Z"
        rep["timings_ms"] = {**rep.get("timings_ms", {}), "total": round(rng.uniform(200, 900), 2)}
        out.append(rep)
    return out


@pytest.fixture
def decoded_chars(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many characters JSON's decoder went through (every json.loads goes through raw_decode)."""
    count = [0]
    real = json.JSONDecoder.raw_decode

    def counting(self: json.JSONDecoder, s: str, idx: int = 0) -> tuple[Any, int]:
        value, end = real(self, s, idx)
        count[0] += end - idx
        return value, end

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counting)
    return count


@pytest.mark.parametrize("shape", ["jsonl", "dir", "srun"])
def test_a_fleet_of_one_image_is_decoded_about_once_per_image(tmp_path: Path, reports: dict[str, str],
                                                               decoded_chars: list[int], shape: str) -> None:
    nodes = _fleet(reports, 120)
    size = sum(len(json.dumps(r, indent=2)) for r in nodes[:len(reports)])  # each image once, pretty
    if shape == "jsonl":
        path = tmp_path / "reports.jsonl"
        path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in nodes))
    elif shape == "dir":
        path = tmp_path / "reports"
        path.mkdir()
        for r in nodes:
            (path / f"{r['host']['name']}.json").write_text(json.dumps(r, indent=2) + "\n")
    else:  # `srun ... check --json`: pretty reports one after another
        path = tmp_path / "srun.out"
        path.write_text("".join(json.dumps(r, indent=2) + "\n" for r in nodes))
    decoded_chars[0] = 0
    fleet = merge([str(path)], min_driver=lambda cuda: None)  # the shipped matrix is JSON too: not counted
    assert len(fleet.nodes) == 120
    assert all(n.reason is None for n in fleet.nodes)
    # the host sections, times and timings of 120 nodes, plus each image's text once (twice at most:
    # a pretty and a compact layout): far below the 120 reports' whole text
    assert decoded_chars[0] < 2 * size + 120 * 2000, (decoded_chars[0], size)


def test_the_merge_equals_decoding_each_report_whole(tmp_path: Path, reports: dict[str, str]) -> None:
    nodes = _fleet(reports, 60)
    path = tmp_path / "reports.jsonl"
    texts = [json.dumps(r, separators=(",", ":")) for r in nodes]
    path.write_text("".join(t + "\n" for t in texts))
    fast = merge([str(path)])
    plain = summarize([node_from_report(json.loads(t), f"{path}:{i + 1}") for i, t in enumerate(texts)])
    assert fast.nodes == plain.nodes
    assert [n.host for n in fast.nodes] == [n.host for n in plain.nodes]
    assert (fast.findings, fast.drift, fast.groups) == (plain.findings, plain.drift, plain.groups)


TEXTS = [
    '{"a": 1, "host": {"name": "x"}, "b": [1, 2], "taken_at": "t", "timings_ms": {"total": 1}}',
    '{"host":{"name":"x"},"timings_ms":{}}',
    '{"a": {"host": {"name": "nested"}}, "b": 2}',  # the only "host" is nested
    '{"a": {"timings_ms": {}}, "timings_ms": {"total": 2}, "host": {}}',  # a nested one before the top one
    '{"host": 1, "host": 2}',  # a repeated field: the last one counts, as for json.loads
    '{"x": "\\"host\\": 1", "host": "y"}',  # the name inside a string
    '  {\n  "host" : {},\n  "z": null\n}\n',  # whitespace around the colon
    '{"s": 1, "host": {}}  ',
    '{"a": [1, {"host": 2}], "b": {"c": [{"taken_at": 3}]}, "timings_ms": [4]}',
    '{}',
    '[1, 2]',
    '"host"',
]


@pytest.mark.parametrize("text", TEXTS)
def test_the_decoder_gives_what_json_loads_gives(text: str) -> None:
    decode = ReportDecoder()
    for _ in range(2):  # the second time from what the first one kept
        assert decode(text) == json.loads(text)


BROKEN = [
    '{"a": 1, "host": {"name": "x"}, "b": [1, 2}',
    '{"a": 1, "host": {"name": "x"},, "b": 2}',
    '{"a": 1 "host": {}}',
    '{"a": {"host": {}}',
    '{"host": {}} trailing',
    '{"a": 1, "host": {"name": "x"}, "timings_ms": {',
    '{"host": {}, "a": 1,}',
    '{,"host": 1}',
    '{"host": 1,}',
    '{"a": 1,, "host": 1}',
]


@pytest.mark.parametrize("text", BROKEN)
def test_the_decoder_refuses_what_json_loads_refuses(text: str) -> None:
    decode = ReportDecoder()
    decode('{"a": 1, "host": {"name": "y"}, "b": [1, 2], "timings_ms": {}}')  # a cached segment or two
    with pytest.raises(ValueError, match=r"."):
        json.loads(text)
    with pytest.raises(ValueError, match=r"."):
        decode(text)
