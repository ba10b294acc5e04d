"""Research screen: window vectors from sentence passes, on all of SciFact (README, "Window
vectors from sentence passes"). Caches token-state sums in /tmp/sw, then scores each design by
writing its vectors into a copy of a SciFact index and running `sourcebook eval retrieval`.

    python bench/window_screen.py embed INDEX.db sentences
    python bench/window_screen.py pairs2 INDEX.db
    python bench/window_screen.py score INDEX.db "win=tok,pre=1,spec=1,chunk=sent,short=int8"

embed: token-state sums of every unique sentence / prefix / chunk text of an index (fp32).
score: write a variant's vectors into a copy of the index and run `sourcebook eval retrieval`.
"""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
import os
from pathlib import Path

import numpy as np

from sourcebook.chunking.sentences import split_sentences
from sourcebook.embedders.late_chunking import padded

OUT = Path("/tmp/sw")


def load_chunks(db: str):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT seq, text, prefix FROM chunks ORDER BY seq").fetchall()


def run_rows(embedder, rows: list[list[int]], per_row) -> list:
    """`per_row(hidden states of row i, i)` for every token row, batched as the product batches,
    with progress every 5,000 rows."""
    results: list = [None] * len(rows)

    def work(batch):
        ids, mask = padded([rows[i] for i in batch])
        hidden = embedder._run(ids, mask)[0]
        return [per_row(hidden[r, : len(rows[i])], i) for r, i in enumerate(batch)]

    done = 0
    t = time.time()
    for batch, res in embedder._each_batch(embedder._batches([len(r) for r in rows]), work):
        for i, value in zip(batch, res):
            results[i] = value
        done += len(batch)
        if done // 5000 != (done - len(batch)) // 5000:
            print(f"{done}/{len(rows)} {time.time() - t:.0f}s load {os.getloadavg()[0]:.1f}", flush=True)
    return results


def embed_stats(embedder, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per text: sum of last hidden states over content tokens, over special tokens, content count."""
    results = run_rows(embedder, embedder._token_rows(texts), lambda h, i: (h[1:-1].sum(0), h[0] + h[-1], len(h) - 2))
    content = np.asarray([c for c, _, _ in results], np.float32)
    special = np.asarray([s for _, s, _ in results], np.float32)
    counts = np.asarray([n for _, _, n in results], np.int32)
    return content, special, counts


def embed(db: str, what: str) -> None:
    from sourcebook.embedders.local import LocalEmbedder

    embedder = LocalEmbedder(precision="fp32")
    chunks = load_chunks(db)
    if what == "sentences":
        texts = sorted({text[s:e] for _, text, _ in chunks for s, e in split_sentences(text)} | {p for _, _, p in chunks if p})
    elif what == "pairs":  # two-sentence windows without the prefix, every one (slide 1)
        texts = set()
        for _, text, _ in chunks:
            sp = split_sentences(text)
            if len(sp) > 2:
                texts |= {text[sp[i][0]:sp[i + 1][1]] for i in range(len(sp) - 1)}
        texts = sorted(texts)
    else:  # chunk embedding texts
        texts = sorted({f"{p}\n{t}" if p else t for _, t, p in chunks})
    print(f"{what}: {len(texts)} texts", flush=True)
    t = time.time()
    c, s, n = embed_stats(embedder, texts)
    print(f"{what}: {time.time() - t:.0f}s", flush=True)
    np.savez(OUT / f"{what}.npz", content=c, special=s, counts=n)
    (OUT / f"{what}.json").write_text(json.dumps(texts))


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


class Stats:
    def __init__(self, what: str) -> None:
        texts = json.loads((OUT / f"{what}.json").read_text())
        self.index = {t: i for i, t in enumerate(texts)}
        z = np.load(OUT / f"{what}.npz")
        self.c, self.s, self.n = z["content"], z["special"], z["counts"]

    def get(self, text: str, specials: bool) -> tuple[np.ndarray, int]:
        i = self.index[text]
        return (self.c[i] + self.s[i], self.n[i] + 2) if specials else (self.c[i], self.n[i])

    def vec(self, text: str) -> np.ndarray:
        i = self.index[text]
        return unit((self.c[i] + self.s[i]) / (self.n[i] + 2))


class P2:
    def __init__(self) -> None:
        self.index = {json.dumps(p): i for i, p in enumerate(json.loads((OUT / "pairs2.json").read_text()))}
        self.parts = np.load(OUT / "pairs2.npy")


def variant_vectors(name: str, chunks, db: str):
    """(seq -> chunk vector, seq -> windows) for a variant name like
    'win=tok,pre=1,spec=1,chunk=sent' (options below)."""
    opts = dict(kv.split("=") for kv in name.split(","))
    sent = Stats("sentences") if (OUT / "sentences.npz").exists() else None
    full = Stats("chunks") if (OUT / "chunks.npz").exists() else None
    pairs = Stats("pairs") if opts.get("win") in ("pair", "pairpre") else None
    p2 = P2() if opts.get("win") == "p2" else None
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        stored = {seq: (v, w) for seq, v, w in conn.execute("SELECT chunk_seq, vector, windows FROM vectors")}
    spec = opts.get("spec", "1") == "1"
    out_v, out_w = {}, {}
    for seq, text, prefix in chunks:
        spans = split_sentences(text)
        sents = [text[s:e] for s, e in spans]
        if sent is None:
            out_v[seq] = np.frombuffer(stored[seq][0], np.float32)
            out_w[seq] = None if stored[seq][1] is None else np.frombuffer(stored[seq][1], np.float32).reshape(-1, 384)
            continue
        ptoks = sent.get(prefix, spec) if prefix and opts.get("pre", "1") == "1" else (0, 0)
        parts = [sent.get(x, spec) for x in sents]
        chunk_mode = opts.get("chunk", "sent")
        if chunk_mode == "int8" or (chunk_mode == "sent" and len(sents) <= 2 and opts.get("short", "full") == "int8"):
            v = np.frombuffer(stored[seq][0], np.float32)
        elif chunk_mode == "full" or (len(sents) <= 2 and opts.get("short", "full") == "full"):
            v = full.vec(f"{prefix}\n{text}" if prefix else text)
        elif chunk_mode == "sentmean":  # mean of the sentence-pass unit vectors (+prefix)
            v = unit(sum(unit(p[0] / p[1]) for p in parts) + (unit(ptoks[0] / ptoks[1]) if ptoks[1] else 0))
        else:  # token mean over the sentence passes (+prefix)
            v = unit(sum(p[0] for p in parts) + ptoks[0])
        out_v[seq] = np.asarray(v, np.float32)
        if len(sents) <= 2:
            out_w[seq] = None
            continue
        win = opts.get("win", "tok")
        rows = []
        if win in ("tok", "both"):
            rows += [unit(parts[i][0] + parts[i + 1][0] + ptoks[0]) for i in range(len(sents) - 1)]
        if win in ("single", "both"):
            rows += [unit(parts[i][0] + ptoks[0]) for i in range(len(sents))]
        if win == "pair":  # pair passes without prefix, prefix pass pooled in
            for i in range(len(sents) - 1):
                c, n = pairs.get(text[spans[i][0]:spans[i + 1][1]], spec)
                rows.append(unit(c + ptoks[0]))
        if win == "p2":  # stride-2 pair passes with the prefix in context
            passes = [p2.index[json.dumps([prefix, *sents[k:k + 2]])] for k in range(0, len(sents), 2)]
            P = p2.parts[passes]  # (passes, 4, dim)
            A = [P[j // 2, 1 + j % 2] for j in range(len(sents))]
            pmode = opts.get("p2pre", "mean")
            for j in range(len(sents) - 1):
                k = j // 2
                if j % 2 == 0:
                    rows.append(unit(P[k].sum(0)))  # the pass itself: a separately embedded window
                else:
                    pre = (P[k, 0] + P[k + 1, 0]) / 2 if pmode == "mean" else P[k, 0]
                    sp_ = (P[k, 3] + P[k + 1, 3]) / 2 if spec else 0
                    rows.append(unit(pre + A[j] + A[j + 1] + sp_))
            if chunk_mode == "p2":
                out_v[seq] = unit(P.sum((0, 1))).astype(np.float32)
        if win == "sep":
            rows = [np.frombuffer(stored[seq][1], np.float32).reshape(-1, 384)]
            out_w[seq] = rows[0]
            continue
        out_w[seq] = np.asarray(rows, np.float32)
    return out_v, out_w


def score(db: str, name: str) -> None:
    chunks = load_chunks(db)
    vecs, wins = variant_vectors(name, chunks, db)
    target = OUT / f"v-{name.replace(',', '_').replace('=', '-')}.db"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
        dst.executemany(
            "UPDATE vectors SET vector = ?, windows = ? WHERE chunk_seq = ?",
            [(vecs[s].tobytes(), None if wins[s] is None else np.ascontiguousarray(wins[s]).tobytes(), s) for s in vecs],
        )
    result = subprocess.run(
        ["/tmp/ci1/.venv/bin/sourcebook", "eval", "retrieval", "/work/shared/eval/scifact", "--db", str(target), "--json"],
        capture_output=True, text=True, env={**os.environ, "SOURCEBOOK_CACHE": "/tmp/s25/int8v4-cache"},
    )
    try:
        report = json.loads(result.stdout.strip().splitlines()[-1])
        figures = {m["mode"]: round(m["metrics"]["ndcg@10"], 4) for m in report["modes"]}
    except Exception:
        print(result.stdout[-2000:], result.stderr[-3000:])
        raise
    line = json.dumps({"variant": name, **figures, "ingest_s": round(report["ingest_seconds"], 1)})
    print(line, flush=True)
    with open(OUT / "results.jsonl", "a") as f:
        f.write(line + "\n")
    target.unlink()
    for extra in target.parent.glob(target.name + "*"):
        subprocess.run(["rm", "-rf", str(extra)])


def embed_pairs2(db: str) -> None:
    """Stride-2 pair passes with the prefix in context: "prefix\n" + sentences (0,1), (2,3), ...
    of every chunk with windows, each embedded alone; per pass the content-token sums of its
    prefix, first and second sentence, and its special tokens."""
    from sourcebook.embedders.local import LocalEmbedder

    embedder = LocalEmbedder(precision="fp32")
    pieces = set()
    for _, text, prefix in load_chunks(db):
        sp = split_sentences(text)
        if len(sp) > 2:
            for k in range(0, len(sp), 2):
                pieces.add((prefix, *(text[s:e] for s, e in sp[k:k + 2])))
    pieces = sorted(pieces)
    texts = [(f"{p[0]}\n" if p[0] else "") + " ".join(p[1:]) for p in pieces]
    print(f"pairs2: {len(texts)} texts", flush=True)
    starts: list[list[int]] = []
    rows = embedder._token_rows(texts, starts)  # each token's first character, -1 for a special token

    def groups(h, i):  # prefix, first, second, specials
        at = np.asarray(starts[i])
        b1 = len(pieces[i][0]) + (1 if pieces[i][0] else 0)
        b2 = b1 + len(pieces[i][1])
        group = np.where(at < 0, 3, np.where(at < b1, 0, np.where(at < b2, 1, 2)))
        return np.stack([h[group == g].sum(0) for g in range(4)])

    t = time.time()
    parts = np.asarray(run_rows(embedder, rows, groups), np.float32)
    print(f"pairs2: {time.time() - t:.0f}s", flush=True)
    np.save(OUT / "pairs2.npy", parts)
    (OUT / "pairs2.json").write_text(json.dumps([list(p) for p in pieces]))


if __name__ == "__main__":
    if sys.argv[1] == "pairs2":
        embed_pairs2(sys.argv[2])
    elif sys.argv[1] == "embed":
        embed(sys.argv[2], sys.argv[3])
    else:
        for variant in sys.argv[3:]:
            score(sys.argv[2], variant)
