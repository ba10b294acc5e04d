"""Graph-augmented retrieval: entities named in the question, and entities of the passages
ordinary retrieval ranks first, pull in the other chunks that mention them and their
neighbours in the graph.

Why it helps: a question that needs two documents ("how long does a failover take for the
database whose switchover is planned for September?") shares words with one of them (the
meeting notes naming harbor-db's switchover); the entity both documents mention
(harbor-db) leads to the second (the runbook's failover step). So there are two sources
of seeds: entities the question names (weight 1) and entities of the first `FIRST_HOP`
hits of keyword + vector retrieval (weight FIRST_HOP_SHARE, the second hop; chunks of the
hit's own document do not count there, that hop has to leave the document).

Scoring, per chunk: an entity weighs w x 1 / log2(1 + the number of chunks mentioning
it), so a rare name counts more than one on every page; a neighbour of a question
entity weighs NEIGHBOUR_SHARE x w x (edge weight / heaviest edge weight); a chunk gets
the sum of the weights of the entities it mentions. Ties are broken by the order of the
first-hop ranking, so the list stays sensible where the graph says little. The list is
fused with the others by reciprocal rank fusion (retrieval.py).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol

from ..models import ScoredId, SearchFilter
from ..stopwords import STOPWORDS
from ..stores.base import GraphStore, SearchStore
from .models import EntityRecord
from .normalize import entity_key

MAX_NGRAM = 5
NEIGHBOURS = 8
NEIGHBOUR_SHARE = 0.3
FIRST_HOP = 3
FIRST_HOP_SHARE = 0.5
MAX_SPREAD = 0.5
ORDER_BY_FIRST_HOP = True


class GraphSearchStore(GraphStore, SearchStore, Protocol):
    """What graph search and browsing read: the graph, and the chunks its entities name."""


_WORD = re.compile(r"[A-Za-z0-9][\w.+#/-]*[\w+#]|[A-Za-z0-9]")


def question_ngrams(question: str) -> list[tuple[int, int, str]]:
    """(first word, last word + 1, key) of every n-gram that could name an entity, longest first."""
    words = [w.rstrip(".") for w in _WORD.findall(question)]
    grams: list[tuple[int, int, str]] = []
    for size in range(MAX_NGRAM, 0, -1):
        for start in range(len(words) - size + 1):
            span = words[start : start + size]
            if span[0].lower() in STOPWORDS or span[-1].lower() in STOPWORDS:
                continue
            if key := entity_key(" ".join(span)):
                grams.append((start, start + size, key))
    return grams


def seed_entities(store: GraphStore, question: str) -> list[EntityRecord]:
    """Entities the question names; a name inside a longer matched name ("Beacon" in
    "Beacon Edge") does not count on its own, nor a lower-case word matching a capitalised
    name in a question that uses capitals ("security" vs "Security")."""
    grams = question_ngrams(question)
    found = store.find_entities(sorted({key for _, _, key in grams}))
    words = [w.rstrip(".") for w in _WORD.findall(question)]
    cased = any(w[0].isupper() for w in words[1:])
    covered: set[int] = set()
    seeds: dict[str, EntityRecord] = {}
    for start, end, key in grams:
        entity = found.get(key)
        if entity is None or any(i in covered for i in range(start, end)):
            continue
        if cased and end - start == 1 and " " not in entity.name and entity.name[0].isupper() != words[start][0].isupper():
            continue
        covered.update(range(start, end))
        seeds[entity.key] = entity
    for start, word in enumerate(words):
        if start not in covered and word[0].isupper() and word.isalpha() and word.lower() not in STOPWORDS:
            if (person := _only_name_starting(store, word)) is not None:
                seeds.setdefault(person.key, person)
    return list(seeds.values())


def _only_name_starting(store: GraphStore, word: str) -> EntityRecord | None:
    """The one two-word name that starts with `word` ("Aiko" -> "Aiko Tanaka"): people are
    called by their given name once introduced. None when there are several or none."""
    matches = [e for e in store.list_entities(query=word, limit=20) if e.name.lower().startswith(word.lower() + " ")]
    return matches[0] if len(matches) == 1 and len(matches[0].name.split()) == 2 else None


def graph_ranking(
    store: GraphSearchStore, question: str, k: int, filters: SearchFilter = SearchFilter(), first_hop: Sequence[str] = ()
) -> list[ScoredId]:
    """Chunks linked to the question's entities, their neighbours and the first hits' entities, best first.

    `first_hop`: chunk ids of ordinary retrieval's ranking, best first (ties are broken by it
    and its first FIRST_HOP chunks seed the second hop).
    """
    weights: dict[str, float] = {e.key: 1.0 for e in seed_entities(store, question)}
    if weights:
        edges = store.entity_relations(list(weights), limit=500)
        heaviest = max((r.weight for r in edges), default=1.0)
        neighbours: dict[str, float] = defaultdict(float)
        for relation in edges:
            for seed, other in ((relation.source, relation.target), (relation.target, relation.source)):
                if seed in weights and other not in weights:
                    neighbours[other] += NEIGHBOUR_SHARE * relation.weight / heaviest
        for key in sorted(neighbours, key=lambda n: -neighbours[n])[:NEIGHBOURS]:
            weights[key] = neighbours[key]
    hop_documents: dict[str, set[str]] = defaultdict(set)
    hop_chunks = store.get_chunks(list(first_hop[:FIRST_HOP]))
    linking: set[str] = set()
    for chunk_id, entities in store.chunk_entities(list(hop_chunks)).items():
        for key in entities:
            hop_documents[key].add(hop_chunks[chunk_id].document_id)
            weights.setdefault(key, 0.0)
    if not weights:
        return []
    rows = store.entity_chunks(list(weights), filters)
    spread: dict[str, set[str]] = defaultdict(set)
    chunk_count: dict[str, int] = defaultdict(int)
    for key, _, document_id, _ in rows:
        spread[key].add(document_id)
        chunk_count[key] += 1
    widest = max(2, int(MAX_SPREAD * store.graph_stats()["documents"]))
    scores: dict[str, float] = defaultdict(float)
    for key, chunk_id, document_id, _ in rows:
        if len(spread[key]) > widest:
            continue  # in most documents: links everything to everything
        weight = weights[key]
        if key in hop_documents and document_id not in hop_documents[key]:
            weight += FIRST_HOP_SHARE
            linking.update(c for c in hop_chunks if hop_chunks[c].document_id in hop_documents[key])
        if weight > 0:
            scores[chunk_id] += weight / math.log2(1 + chunk_count[key])
    # A first hit that leads elsewhere is the first hop's evidence: it leads the list.
    top = max(scores.values(), default=0.0)
    for chunk_id in linking:
        scores[chunk_id] = max(scores.get(chunk_id, 0.0), top) + 1.0
    order = {chunk_id: i for i, chunk_id in enumerate(first_hop)}
    if ORDER_BY_FIRST_HOP:
        ranked = sorted(scores.items(), key=lambda pair: (order.get(pair[0], len(order)), -pair[1]))[:k]
    else:
        ranked = sorted(scores.items(), key=lambda pair: (-pair[1], order.get(pair[0], len(order)), pair[0]))[:k]
    return [ScoredId(chunk_id, rank, score) for rank, (chunk_id, score) in enumerate(ranked, 1)]
