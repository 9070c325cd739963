"""Measure ``explain``'s reading of a long pasted log: ``classify()`` on the real texts of the corpus.

The text is every entry of ``tests/data/explain_corpus/`` joined, repeated ``--repeat`` times (a log of
tens of thousands of real error lines). The figure is ``classify()`` of that text, in process; the anchor,
measured in the same run and interleaved with it, is the least any line reader does with the same text:
``iter_lines`` (the same splitting, long lines windowed) and one ``str.lower()`` per line. The ratio says
what reading a line costs beyond splitting it, whatever the machine.

Usage: python bench/bench_explain.py [--repeat 20] [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ortdoctor.diagnose.classify import classify  # noqa: E402
from ortdoctor.diagnose.textlines import iter_lines  # noqa: E402
from tests.support.explain_corpus import load_corpus  # noqa: E402


def _anchor(text: str) -> int:
    return sum(len(line.lower()) for line in iter_lines(text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="copies of the corpus in the text")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    text = "\n".join([e.text for e in load_corpus()] * args.repeat)
    lines = sum(1 for _ in iter_lines(text))
    classify(text)  # warm: the matrix and the compiled patterns, as a long-running reader has them
    figure: list[float] = []
    anchor: list[float] = []
    for _ in range(args.runs):  # interleaved, so drift hits both sides alike
        t = time.perf_counter()
        _anchor(text)
        anchor.append(time.perf_counter() - t)
        t = time.perf_counter()
        classify(text)
        figure.append(time.perf_counter() - t)
    f, a = statistics.median(figure), statistics.median(anchor)
    print(f"text: {lines} lines ({len(text)} characters), the corpus x{args.repeat}; medians of {args.runs} runs")
    print(f"anchor: iter_lines + lower()  {a * 1000:8.1f} ms")
    print(f"classify()                    {f * 1000:8.1f} ms   {f / a:5.1f}x the anchor")


if __name__ == "__main__":
    main()
