"""What an MCP client pays per tool call: `sourcebook mcp` over stdio and streamable HTTP.

    python bench/mcp_latency.py [--calls 40]

Builds a knowledge base of examples/docs in a temporary folder (about 10 s), starts the real
`sourcebook mcp` process once per transport and times, with the official `mcp` client, `calls`
`search` calls (hybrid, top 5) and `calls / 4` `ask` calls (extractive), each over questions
from examples/questions.jsonl, after one warm-up call of each. Prints p50/p95 per tool and
transport beside the same calls made in process on the `KnowledgeBase`, so the difference is
what the protocol and the process boundary cost. Bounded: about a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from sourcebook import KnowledgeBase

ROOT = Path(__file__).resolve().parent.parent
SOURCEBOOK = str(Path(sys.executable).with_name("sourcebook"))


def percentiles(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return f"p50 {statistics.median(ms):7.1f} ms   p95 {p95:7.1f} ms   (n={len(ms)})"


def time_calls(call: Callable[[str], object], questions: list[str]) -> list[float]:
    call(questions[0])  # warm-up: loads the model, fills caches
    samples = []
    for q in questions:
        started = time.perf_counter()
        call(q)
        samples.append(time.perf_counter() - started)
    return samples


async def time_client(client: Client, tool: str, key: str, questions: list[str]) -> list[float]:
    await client.call_tool(tool, {key: questions[0]})
    samples = []
    for q in questions:
        started = time.perf_counter()
        result = await client.call_tool(tool, {key: q})
        samples.append(time.perf_counter() - started)
        assert not result.is_error, result.content
    return samples


def over(connect: Callable[[], Client], searches: list[str], asks: list[str]) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}

    async def run() -> None:
        async with connect() as client:
            results["search"] = await time_client(client, "search", "query", searches)
            results["ask"] = await time_client(client, "ask", "question", asks)

    anyio.run(run)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40, help="search calls per transport (asks: a quarter)")
    args = parser.parse_args(argv)
    lines = (ROOT / "examples" / "questions.jsonl").read_text().splitlines()
    questions = [json.loads(line)["question"] for line in lines if line.strip()]
    searches = [questions[i % len(questions)] for i in range(args.calls)]
    asks = searches[: max(1, args.calls // 4)]

    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "kb.db")
        with KnowledgeBase.open(db) as kb:
            kb.add(str(ROOT / "examples" / "docs"))
            rows = {"in process": {
                "search": time_calls(lambda q: kb.search(q, top_k=5), searches),
                "ask": time_calls(lambda q: kb.ask(q), asks),
            }}
        rows["MCP stdio"] = over(
            lambda: Client(StdioServerParameters(command=SOURCEBOOK, args=["--db", db, "mcp"]), read_timeout_seconds=120),
            searches, asks,
        )
        server = subprocess.Popen([SOURCEBOOK, "--db", db, "mcp", "--transport", "http", "--port", "0"],
                                  stderr=subprocess.PIPE, text=True)
        try:
            url = server.stderr.readline().rsplit(" ", 1)[1].strip()
            rows["MCP streamable HTTP"] = over(lambda: Client(url, read_timeout_seconds=120), searches, asks)
        finally:
            server.terminate()
            server.wait(timeout=30)

    for name, tools in rows.items():
        for tool, samples in tools.items():
            print(f"{name:20} {tool:7} {percentiles(samples)}")


if __name__ == "__main__":
    main()
