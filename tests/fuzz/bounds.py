"""What every fuzz target shares: its budget, and a time limit on each example.

``ORTDOCTOR_FUZZ_EXAMPLES`` (default 200) sets the examples of a light target; a target whose example
costs more (writing a real library, validating the whole matrix) runs a fraction of it. All of
``tests/fuzz`` stays within about two minutes of CPU on a 2-core machine; set the variable high for a
long run. ``within()`` turns a hang into a failure: a blocked ``open()`` or an endless loop ends with
``Hung`` after ``EXAMPLE_SECONDS``, which no reader's ``except OSError`` can swallow.

The test command draws the same examples on every run (``derandomize``): a suite that fails on one run
in twenty tells a contributor nothing about their change. ``ORTDOCTOR_FUZZ_RANDOM=1`` draws fresh
examples (with ``ORTDOCTOR_FUZZ_EXAMPLES`` high, the long exploratory run); what it finds becomes an
``@example`` next to its target, so the fixed input is replayed by every run after it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("ORTDOCTOR_FUZZ_EXAMPLES", "200"))
EXAMPLE_SECONDS = 20
RANDOM = os.environ.get("ORTDOCTOR_FUZZ_RANDOM") == "1"
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=not RANDOM,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
FUZZ_HEAVY = settings(FUZZ, max_examples=max(10, EXAMPLES // 4))


class Hung(BaseException):
    """One example ran past EXAMPLE_SECONDS."""


@contextmanager
def within(seconds: int = EXAMPLE_SECONDS) -> Iterator[None]:
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def hung(signum: int, frame: object) -> None:
        raise Hung(f"one example ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
