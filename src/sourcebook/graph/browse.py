"""Browsing the graph: an entity found by name, with its passages and its neighbours, each
neighbour with the passages that support the relation (what `sourcebook graph show` prints
and what a web view would fetch)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import EntityNotFoundError
from ..models import StoredChunk
from ..stores.base import GraphStore
from .models import EntityRecord, RelationRecord
from .normalize import entity_key
from .search import GraphSearchStore

PASSAGES = 5


@dataclass(frozen=True)
class Neighbour:
    relation: RelationRecord
    entity: str
    """The key of the entity at the other end."""
    outgoing: bool
    passages: tuple[StoredChunk, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"entity": self.entity, "outgoing": self.outgoing, **self.relation.to_dict(),
                "passages": [passage_dict(c) for c in self.passages]}


@dataclass(frozen=True)
class EntityView:
    entity: EntityRecord
    passages: tuple[StoredChunk, ...]
    neighbours: tuple[Neighbour, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"entity": self.entity.to_dict(), "passages": [passage_dict(c) for c in self.passages],
                "neighbours": [n.to_dict() for n in self.neighbours]}


def passage_dict(chunk: StoredChunk) -> dict[str, Any]:
    return {"chunk_id": chunk.id, "document_id": chunk.document_id, "source": chunk.source, "title": chunk.title,
            "heading_path": list(chunk.heading_path), "page": chunk.page, "location": chunk.location, "text": chunk.text}


def find_entity(store: GraphStore, name: str) -> EntityRecord:
    """The entity `name` names: by its id (key) as given, by key or alias, else the only entity
    whose name contains it.

    The id comes first because keys are not a fixed point of `entity_key`: "NORTHWIND LABS"
    keeps its all-capitals last word as an acronym (key "northwind labs"), while that key typed
    back normalises to "northwind lab", another entity. An id must always find its own entity.
    """
    given, key = name.strip(), entity_key(name)
    found = store.find_entities([k for k in (given, key) if k])
    if given in found or key in found:
        return found.get(given) or found[key]
    candidates = store.list_entities(query=name.strip(), limit=6)
    exact = [e for e in candidates if e.name.lower() == name.strip().lower()]
    if len(candidates) == 1 or len(exact) == 1:
        return (exact or candidates)[0]
    if not candidates:
        raise EntityNotFoundError(f"no entity named {name!r} in the graph; list entities with `sourcebook graph list`")
    listed = ", ".join(repr(e.name) for e in candidates[:5])
    raise EntityNotFoundError(f"{name!r} matches several entities ({listed}); give the full name")


def entity_view(store: GraphSearchStore, name: str, neighbours: int = 20, passages: int = PASSAGES) -> EntityView:
    entity = find_entity(store, name)
    own = [chunk_id for _, chunk_id, _, _ in store.entity_chunks([entity.key])][:passages]
    relations = store.entity_relations([entity.key], limit=neighbours)
    wanted = own + [c for r in relations for c in r.chunk_ids[:passages]]
    chunks = store.get_chunks(wanted)
    return EntityView(
        entity,
        tuple(chunks[c] for c in own if c in chunks),
        tuple(
            Neighbour(r, r.target if r.source == entity.key else r.source, r.source == entity.key,
                      tuple(chunks[c] for c in r.chunk_ids[:passages] if c in chunks))
            for r in relations
        ),
    )
