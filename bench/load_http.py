"""Load test of the HTTP API: concurrent clients mixing search, ask and upload on loopback.

Starts `sourcebook serve` as its own process on a free port over a fresh knowledge base of
examples/docs (about 30 s to index), gives each client its own API key, and runs CLIENTS
clients for DURATION seconds, each picking search (60%), ask (30%) or upload (10%, a new
small document each time) and waiting for the answer before the next request. Then it waits
for every uploaded document to finish ingesting and prints, per operation: requests,
throughput, p50/p95 latency and errors (any non-2xx answer, transport error, or upload that
ends in status error). About 2 minutes in all with the defaults.

`--mix search=1` runs searches only (issue 17's throughput target: >= 100 searches/s, p99 <= 250 ms
under 20 clients); `--unique-queries` makes every query new (a number appended), so the server's
query cache (on by default) never serves one and the figure is the search path's own. The server
runs with a tenant rate limit of `--tenant-rate` requests/s (default 1,000; the product's default
of 100 would cap the measurement, since every client's key belongs to one tenant).

    python bench/load_http.py [--clients 20] [--duration 60] [--mix search=0.6,ask=0.3,upload=0.1]
                              [--unique-queries] [--tenant-rate 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx

from sourcebook import KnowledgeBase
from sourcebook.apikeys import make_grants

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
QUESTIONS = [json.loads(line)["question"] for line in (EXAMPLES / "questions.jsonl").read_text().splitlines() if line.strip()]
SEARCHES = ["annual leave", "incident severity levels", "travel expenses per diem", "password rotation policy",
            "release notes beacon", "onboarding first week", "on-call escalation", "hybrid working anchor days"]
MIX = "search=0.6,ask=0.3,upload=0.1"


def parse_mix(text: str) -> tuple[tuple[str, float], ...]:
    """"search=0.6,ask=0.3,upload=0.1" -> the operations and their weights (absent ones weigh 0)."""
    weights = {name: 0.0 for name in ("search", "ask", "upload")}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        if name.strip() not in weights:
            raise SystemExit(f"--mix: unknown operation {name!r}; use search, ask and upload")
        weights[name.strip()] = float(weight)
    return tuple(weights.items())


def start_server(db: str, log_path: Path, tenant_rate: float) -> tuple[subprocess.Popen[bytes], str]:
    """`sourcebook serve` on a free port; returns the process and its base URL (from its banner)."""
    log = log_path.open("wb")
    command = [sys.executable, "-c", "from sourcebook.cli import app; app()", "serve", "--db", db, "--port", "0"]
    env = {**os.environ, "SOURCEBOOK_SERVER_TENANT_RATE_LIMIT_PER_SECOND": str(tenant_rate),
           "SOURCEBOOK_SERVER_TENANT_RATE_LIMIT_BURST": str(int(2 * tenant_rate))}
    process = subprocess.Popen(command, stderr=log, stdout=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        match = re.search(r"on (http://127\.0\.0\.1:\d+)", log_path.read_text(errors="replace"))
        if match:
            return process, match.group(1)
        if process.poll() is not None:
            raise SystemExit(f"the server exited: {log_path.read_text()}")
        time.sleep(0.1)
    process.kill()
    raise SystemExit("the server did not start in 120 s")


async def client(url: str, secret: str, until: float, seed: int, results: dict[str, list[float]],
                 errors: dict[str, list[str]], uploaded: list[str], mix: tuple[tuple[str, float], ...],
                 unique: bool) -> None:
    rng = random.Random(seed)
    operations, weights = zip(*mix, strict=True)
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {secret}"}, timeout=120) as http:
        n = 0
        while time.monotonic() < until:
            operation = rng.choices(operations, weights)[0]
            started = time.perf_counter()
            try:
                suffix = f" {rng.randrange(10**9)}" if unique else ""
                if operation == "search":
                    response = await http.post("/v1/search", json={"query": rng.choice(SEARCHES) + suffix, "top_k": 5})
                elif operation == "ask":
                    response = await http.post("/v1/ask", json={"question": rng.choice(QUESTIONS) + suffix})
                else:
                    n += 1
                    text = f"# Load note {seed}-{n}\n\nClient {seed} wrote note {n} about {rng.choice(SEARCHES)}.\n"
                    files = {"files": (f"load-{seed}-{n}.md", text.encode(), "text/markdown")}
                    response = await http.post("/v1/documents", files=files, data={"collection": "load"})
                    if response.status_code == 202:
                        uploaded.extend(d["id"] for d in response.json()["documents"])
            except httpx.HTTPError as exc:
                errors[operation].append(repr(exc))
                continue
            elapsed = time.perf_counter() - started
            if response.is_success:
                results[operation].append(elapsed)
            else:
                errors[operation].append(f"{response.status_code} {response.text[:200]}")


async def wait_ingested(url: str, secret: str, ids: list[str], timeout: float = 300) -> tuple[dict[str, int], float]:
    """Poll until every uploaded document is ready or in error; the counts by status, and the wait."""
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {secret}"}, timeout=60) as http:
        while True:
            docs = (await http.get("/v1/documents", params={"collection": "load"})).json()["documents"]
            statuses = {d["id"]: d["status"] for d in docs}
            counts: dict[str, int] = defaultdict(int)
            for doc_id in ids:
                counts[statuses.get(doc_id, "missing")] += 1
            if counts["ready"] + counts["error"] == len(ids) or time.monotonic() - started > timeout:
                return dict(counts), time.monotonic() - started
            await asyncio.sleep(0.5)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of process `pid` (Linux /proc; None elsewhere): the server's own
    cost per request, apart from the clients' on the same cores."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else (values or [0.0])[0]


async def run(url: str, secrets: list[str], duration: float, mix: tuple[tuple[str, float], ...], unique: bool,
              server_pid: int) -> int:
    results: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, list[str]] = defaultdict(list)
    uploaded: list[str] = []
    cpu_before = cpu_seconds(server_pid)
    started = time.monotonic()
    until = started + duration
    await asyncio.gather(*(client(url, s, until, i, results, errors, uploaded, mix, unique) for i, s in enumerate(secrets)))
    wall = time.monotonic() - started
    cpu_after = cpu_seconds(server_pid)
    ingest, waited = await wait_ingested(url, secrets[0], uploaded)

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{len(secrets)} clients, {wall:.1f} s on loopback, {os.cpu_count()} CPUs, load average {load}")
    print(f"queries {'each new (cache misses)' if unique else 'from a fixed list (the query cache serves repeats)'}")
    print(f"{'operation':<10}{'requests':>10}{'req/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'errors':>8}")
    total_errors = 0
    for operation, weight in mix:
        if not weight:
            continue
        times = results[operation]
        failed = len(errors[operation])
        total_errors += failed
        print(f"{operation:<10}{len(times):>10}{len(times) / wall:>9.1f}{percentile(times, 50) * 1000:>9.1f}"
              f"{percentile(times, 95) * 1000:>9.1f}{percentile(times, 99) * 1000:>9.1f}{failed:>8}")
    done = sum(len(v) for v in results.values())
    print(f"{'all':<10}{done:>10}{done / wall:>9.1f}{'':>27}{total_errors:>8}")
    if cpu_before is not None and cpu_after is not None and done:
        print(f"server CPU: {1000 * (cpu_after - cpu_before) / done:.2f} ms per request "
              f"({(cpu_after - cpu_before) / wall:.2f} of {os.cpu_count()} cores)")
    ingest_errors = len(uploaded) - ingest.get("ready", 0)
    print(f"uploads ingested: {ingest.get('ready', 0)} of {len(uploaded)} ready "
          f"({waited:.1f} s after the load ended); not ready: {ingest_errors}")
    for operation, messages in errors.items():
        for message in messages[:3]:
            print(f"  {operation} error: {message}")
    return total_errors + ingest_errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--mix", default=MIX, help=f"operation weights (default {MIX})")
    parser.add_argument("--unique-queries", action="store_true", help="every query new: no query cache hits")
    parser.add_argument("--tenant-rate", type=float, default=1000.0, help="the server's tenant rate limit (requests/s)")
    args = parser.parse_args()
    mix = parse_mix(args.mix)
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "load.db")
        started = time.monotonic()
        with KnowledgeBase.open(db) as kb:
            kb.add(str(EXAMPLES / "docs"))
            keys = kb.api_keys()
            secrets = [keys.create(f"load-{i}", "default", make_grants("write")).secret for i in range(args.clients)]
            keys.close()
        print(f"indexed examples/docs in {time.monotonic() - started:.1f} s")
        process, url = start_server(db, Path(tmp) / "server.log", args.tenant_rate)
        try:
            failures = asyncio.run(run(url, secrets, args.duration, mix, args.unique_queries, process.pid))
        finally:
            process.terminate()
            process.wait(30)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
