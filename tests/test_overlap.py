"""overlap.py: two calls overlapped give what the two one after the other give (results,
errors, context) and never leave threads or work behind."""

from __future__ import annotations

import contextvars
import threading

import pytest

from sourcebook import overlap
from sourcebook.errors import InvalidQueryError, StoreError
from sourcebook.overlap import overlapped

TIMEOUT = 10.0


def test_both_run_at_once_and_return_in_order() -> None:
    """Each call waits for the other to have started: one after the other would time out."""
    both = threading.Barrier(2, timeout=TIMEOUT)

    def first() -> str:
        both.wait()
        return threading.current_thread().name

    def second() -> str:
        both.wait()
        return threading.current_thread().name

    worker, caller = overlapped(first, second)
    assert caller == threading.current_thread().name
    assert worker.startswith("sourcebook-overlap") and worker != caller


def test_the_first_calls_error_wins_as_in_order() -> None:
    """first() then second() raises first's error: so does the overlap, the same object."""
    error = StoreError("keyword side")

    def first() -> None:
        raise error

    def second() -> None:
        raise InvalidQueryError("vector side")

    with pytest.raises(StoreError) as raised:
        overlapped(first, second)
    assert raised.value is error
    with pytest.raises(StoreError) as raised:
        overlapped(first, lambda: "fine")
    assert raised.value is error


def test_the_second_calls_error_surfaces_once_the_first_has_ended() -> None:
    ended = threading.Event()
    error = InvalidQueryError("vector side")

    def first() -> None:
        ended.wait(0.2)  # still running when second fails
        ended.set()

    def second() -> None:
        raise error

    with pytest.raises(InvalidQueryError) as raised:
        overlapped(first, second)
    assert raised.value is error and ended.is_set()


def test_the_worker_runs_in_the_callers_context() -> None:
    """The request id of the logs and the usage tally are context variables."""
    variable: contextvars.ContextVar[str] = contextvars.ContextVar("variable", default="unset")
    variable.set("request-7")
    assert overlapped(variable.get, variable.get) == ("request-7", "request-7")


def test_a_busy_pool_runs_both_in_the_caller() -> None:
    """With every worker held, the caller takes the first call back instead of waiting for one:
    a pool full of searches is never a queue, and never a deadlock."""
    release = threading.Event()
    started = threading.Barrier(overlap.WORKERS + 1, timeout=TIMEOUT)

    def hold() -> None:
        started.wait()
        release.wait(TIMEOUT)

    held = [overlap._shared_pool().submit(hold) for _ in range(overlap.WORKERS)]
    try:
        started.wait()
        first_thread, second_thread = overlapped(
            lambda: threading.current_thread().name, lambda: threading.current_thread().name
        )
        assert first_thread == second_thread == threading.current_thread().name
    finally:
        release.set()
        for future in held:
            future.result(TIMEOUT)


def test_threads_are_bounded_however_many_calls() -> None:
    before = threading.active_count()
    for _ in range(50):
        overlapped(lambda: 1, lambda: 2)
    named = [t for t in threading.enumerate() if t.name.startswith("sourcebook-overlap")]
    assert len(named) <= overlap.WORKERS
    assert threading.active_count() <= before + overlap.WORKERS
