"""Concurrent query embeddings share model runs and still give each query its own vector."""

import queue
import threading
import time

import numpy as np
import pytest

from sourcebook.embedders import LocalEmbedder
from sourcebook.embedders.coalescing import QueryCoalescer


def _sessions(count: int) -> queue.SimpleQueue:
    idle: queue.SimpleQueue = queue.SimpleQueue()
    for number in range(count):
        idle.put(f"session-{number}")
    return idle


def test_queries_waiting_for_a_busy_session_share_its_next_run():
    runs: list[list[int]] = []
    first_running = threading.Event()
    release = threading.Event()

    def run(rows, session):
        runs.append([row[0] for row in rows])
        if len(runs) == 1:  # hold the only session until the others queue up behind it
            first_running.set()
            release.wait(5)
        return np.array([[float(row[0])] for row in rows])

    coalescer = QueryCoalescer(_sessions(1), run, max_batch=8)
    results: dict[int, float] = {}
    threads = [threading.Thread(target=lambda n=n: results.__setitem__(n, float(coalescer.embed([n])[0])))
               for n in range(6)]
    threads[0].start()
    assert first_running.wait(5)
    for thread in threads[1:]:
        thread.start()
    time.sleep(0.2)  # the five others are waiting now
    release.set()
    for thread in threads:
        thread.join(5)
    assert results == {n: float(n) for n in range(6)}
    assert runs[0] == [0] and sorted(runs[1]) == [1, 2, 3, 4, 5] and len(runs) == 2


def test_a_failed_run_fails_its_caller_and_the_others_run_again():
    calls = {"count": 0}

    def run(rows, session):
        calls["count"] += 1
        if calls["count"] == 1:
            raise RuntimeError("model failed")
        return np.ones((len(rows), 1))

    coalescer = QueryCoalescer(_sessions(1), run)
    with pytest.raises(RuntimeError):
        coalescer.embed([1])
    assert coalescer.embed([2])[0] == 1.0  # the session went back to the pool


def test_batches_are_capped():
    sizes: list[int] = []
    gate = threading.Event()

    def run(rows, session):
        sizes.append(len(rows))
        gate.wait(5)
        return np.zeros((len(rows), 1))

    coalescer = QueryCoalescer(_sessions(1), run, max_batch=3)
    threads = [threading.Thread(target=coalescer.embed, args=([n],)) for n in range(7)]
    for thread in threads:
        thread.start()
    time.sleep(0.2)
    gate.set()
    for thread in threads:
        thread.join(5)
    assert max(sizes) <= 3 and sum(sizes) == 7


def test_concurrent_queries_get_the_vectors_they_get_alone():
    """Padding a query beside longer ones in a shared run does not change its vector (fp32)."""
    embedder = LocalEmbedder(precision="fp32")
    queries = [f"question number {n} about {'annual leave ' * (n % 4)}policy" for n in range(16)]
    alone = np.stack([embedder.embed_query(query) for query in queries])
    together = np.zeros_like(alone)

    def embed(n: int) -> None:
        together[n] = embedder.embed_query(queries[n])

    threads = [threading.Thread(target=embed, args=(n,)) for n in range(len(queries))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert np.abs(together - alone).max() < 1e-5
