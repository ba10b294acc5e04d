"""The knowledge graph's write path, shared by the SQLite and Postgres stores.

The algorithm (see sqlite/graph.py for the schema's reasons) is the same on both: drop
the document's provenance rows, resolve aliases (merging a node stored under a new
alias into its canonical node), upsert nodes, mentions, edges and supports, record the
build, and prune what nothing supports any more. Its SQL is written once in the common
subset of both dialects (`?` placeholders, ON CONFLICT, RETURNING); each store passes an
`Execute` that runs such SQL on its connection inside its own transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...graph.models import WEAK_TYPES, DocumentGraph

Execute = Callable[..., Any]
"""Runs one statement with `?` placeholders and a parameter sequence; returns a cursor."""


def _in(values: Sequence[Any]) -> str:
    """`(?, ?, ?)` for an IN list (NULL for an empty one, which matches nothing)."""
    return "(" + (", ".join("?" * len(values)) or "NULL") + ")"


def forget_document(execute: Execute, document_id: str) -> None:
    """Drop the document's provenance rows and prune what they alone supported."""
    seqs = [row[0] for row in execute("SELECT seq FROM chunks WHERE document_id = ?", (document_id,)).fetchall()]
    execute("DELETE FROM graph_documents WHERE document_id = ?", (document_id,))
    if not seqs:
        return
    where = f"chunk_seq IN {_in(seqs)}"
    nodes = [r[0] for r in execute(f"SELECT DISTINCT node_id FROM graph_mentions WHERE {where}", seqs).fetchall()]
    edges = [r[0] for r in execute(f"SELECT DISTINCT edge_id FROM graph_edge_support WHERE {where}", seqs).fetchall()]
    execute(f"DELETE FROM graph_mentions WHERE {where}", seqs)
    execute(f"DELETE FROM graph_edge_support WHERE {where}", seqs)
    _prune(execute, nodes, edges)


def _prune(execute: Execute, nodes: Sequence[int], edges: Sequence[int]) -> None:
    """Delete the given edges and nodes that have no provenance left (a node's edges and
    aliases go with it by cascade)."""
    if edges:
        execute(
            f"""DELETE FROM graph_edges WHERE id IN {_in(edges)}
                AND NOT EXISTS (SELECT 1 FROM graph_edge_support s WHERE s.edge_id = graph_edges.id)""",
            list(edges),
        )
    if nodes:
        execute(
            f"""DELETE FROM graph_nodes WHERE id IN {_in(nodes)}
                AND NOT EXISTS (SELECT 1 FROM graph_mentions m WHERE m.node_id = graph_nodes.id)""",
            list(nodes),
        )


def replace_document_graph(execute: Execute, tenant: str, graph: DocumentGraph, now: Any) -> None:
    """Swap the document's contribution to the graph for `graph` (see the module docstring)."""
    forget_document(execute, graph.document_id)
    seqs = dict(execute("SELECT id, seq FROM chunks WHERE document_id = ?", (graph.document_id,)).fetchall())
    attributes = {m.key: (m.name, m.type, m.summary) for m in graph.mentions}
    writer = _GraphWriter(execute, tenant, attributes)
    for alias in graph.aliases:
        writer.add_alias(alias.alias, alias.key)
    for mention in graph.mentions:
        if mention.chunk_id in seqs:
            node = writer.node(mention.key, (mention.name, mention.type, mention.summary))
            execute(
                """INSERT INTO graph_mentions (node_id, chunk_seq, count) VALUES (?, ?, ?)
                   ON CONFLICT (node_id, chunk_seq) DO UPDATE SET count = graph_mentions.count + excluded.count""",
                (node, seqs[mention.chunk_id], mention.count),
            )
    for link in graph.links:
        if link.chunk_id not in seqs:
            continue
        source, target = writer.node(link.source), writer.node(link.target)
        if source != target:
            writer.support(writer.edge(source, target, link.relation), seqs[link.chunk_id], link.weight)
    execute(
        """INSERT INTO graph_documents (document_id, tenant, extractor, content_hash, built_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (tenant, document_id) DO UPDATE SET extractor = excluded.extractor,
               content_hash = excluded.content_hash, built_at = excluded.built_at""",
        (graph.document_id, tenant, graph.extractor, graph.content_hash, now),
    )
    # Nodes created for aliases or links but never mentioned have no provenance: drop them.
    _prune(execute, writer.created, [])


class _GraphWriter:
    """Node, alias and edge upserts of one tenant inside one transaction."""

    def __init__(self, execute: Execute, tenant: str, attributes: dict[str, tuple[str, str, str]]) -> None:
        self.execute = execute
        self.tenant = tenant
        self.attributes = attributes
        self.created: list[int] = []

    def resolve(self, key: str) -> int | None:
        row = self.execute(
            "SELECT node_id FROM graph_aliases WHERE tenant = ? AND alias = ?", (self.tenant, key)
        ).fetchone() or self.execute(
            "SELECT id FROM graph_nodes WHERE tenant = ? AND key = ?", (self.tenant, key)
        ).fetchone()
        return None if row is None else int(row[0])

    def node(self, key: str, attributes: tuple[str, str, str] | None = None) -> int:
        """The node `key` names (through aliases), created if new; its name, type and summary
        improve when this mention knows better (a capitalised name, a specific type, a summary)."""
        name, type_, summary = attributes or self.attributes.get(key, (key, "concept", ""))
        found = self.resolve(key)
        if found is None:
            created = int(self.execute(
                "INSERT INTO graph_nodes (tenant, key, name, type, summary) VALUES (?, ?, ?, ?, ?) RETURNING id",
                (self.tenant, key, name, type_, summary),
            ).fetchone()[0])
            self.created.append(created)
            return created
        old_name, old_type, old_summary = self.execute(
            "SELECT name, type, summary FROM graph_nodes WHERE id = ?", (found,)
        ).fetchone()
        better_name = old_name.islower() and not name.islower() and key == self.key_of(found)
        self.execute(
            "UPDATE graph_nodes SET name = ?, type = ?, summary = ? WHERE id = ?",
            (
                name if better_name else old_name,
                type_ if old_type in WEAK_TYPES and type_ not in WEAK_TYPES else old_type,
                old_summary or summary,
                found,
            ),
        )
        return found

    def key_of(self, node: int) -> str:
        return str(self.execute("SELECT key FROM graph_nodes WHERE id = ?", (node,)).fetchone()[0])

    def add_alias(self, alias: str, key: str) -> None:
        """Make `alias` name the node of `key`; an existing node called `alias` merges into it."""
        canonical = self.node(key)
        if self.resolve(alias) == canonical:
            return
        if self.execute(
            "SELECT 1 FROM graph_aliases WHERE tenant = ? AND alias = ?", (self.tenant, alias)
        ).fetchone():
            return  # the alias names another node already: the first definition wins
        old = self.execute("SELECT id FROM graph_nodes WHERE tenant = ? AND key = ?", (self.tenant, alias)).fetchone()
        if old is not None and int(old[0]) != canonical:
            self.merge(int(old[0]), canonical)
        self.execute(
            "INSERT INTO graph_aliases (tenant, alias, node_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (self.tenant, alias, canonical),
        )

    def merge(self, old: int, into: int) -> None:
        """Move `old`'s mentions, edges and aliases to `into`, then delete `old`."""
        self.execute(
            """INSERT INTO graph_mentions (node_id, chunk_seq, count)
               SELECT ?, chunk_seq, count FROM graph_mentions WHERE node_id = ? AND true
               ON CONFLICT (node_id, chunk_seq) DO UPDATE SET count = graph_mentions.count + excluded.count""",
            (into, old),
        )
        edges = self.execute(
            "SELECT id, source_id, target_id, relation FROM graph_edges WHERE source_id = ? OR target_id = ?", (old, old)
        ).fetchall()
        for edge, source, target, relation in edges:
            source, target = (into if source == old else source), (into if target == old else target)
            if source != target:
                moved = self.edge(source, target, relation)
                self.execute(
                    """INSERT INTO graph_edge_support (edge_id, chunk_seq, weight)
                       SELECT ?, chunk_seq, weight FROM graph_edge_support WHERE edge_id = ? AND true
                       ON CONFLICT (edge_id, chunk_seq) DO UPDATE SET weight = graph_edge_support.weight + excluded.weight""",
                    (moved, edge),
                )
            self.execute("DELETE FROM graph_edges WHERE id = ?", (edge,))
        self.execute("UPDATE graph_aliases SET node_id = ? WHERE node_id = ?", (into, old))
        self.execute(
            """INSERT INTO graph_aliases (tenant, alias, node_id) SELECT tenant, key, ? FROM graph_nodes WHERE id = ?
               ON CONFLICT DO NOTHING""",
            (into, old),
        )
        self.execute("DELETE FROM graph_nodes WHERE id = ?", (old,))

    def edge(self, source: int, target: int, relation: str) -> int:
        self.execute(
            "INSERT INTO graph_edges (source_id, target_id, relation) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (source, target, relation),
        )
        row = self.execute(
            "SELECT id FROM graph_edges WHERE source_id = ? AND target_id = ? AND relation = ?", (source, target, relation)
        ).fetchone()
        return int(row[0])

    def support(self, edge: int, chunk_seq: int, weight: float) -> None:
        self.execute(
            """INSERT INTO graph_edge_support (edge_id, chunk_seq, weight) VALUES (?, ?, ?)
               ON CONFLICT (edge_id, chunk_seq) DO UPDATE SET weight = graph_edge_support.weight + excluded.weight""",
            (edge, chunk_seq, weight),
        )
