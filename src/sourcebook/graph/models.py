"""The knowledge graph's value types: what extractors produce, what the store keeps, what readers get.

Extraction is per chunk (`ChunkExtraction`, cached by chunk hash as JSON); the builder
merges a document's extractions into a `DocumentGraph` whose every mention, link and
alias names the chunk it came from, so the store can keep provenance and drop what
only a removed document supported.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

WEAK_TYPES = frozenset({"concept", "phrase", "other"})
"""Types a more specific one (from another mention or an LLM) may replace on a merged node."""


@dataclass(frozen=True)
class ExtractedEntity:
    """A node as one chunk names it. `aliases` are other names of the same thing (DCP for
    Data Collection Pipeline); `weak` marks a candidate kept only when it recurs (offline key phrases)."""

    name: str
    type: str
    summary: str = ""
    aliases: tuple[str, ...] = ()
    count: int = 1
    weak: bool = False


@dataclass(frozen=True)
class ExtractedRelation:
    """A directed edge between two entity names of the same chunk."""

    source: str
    relation: str
    target: str
    weight: float = 1.0


@dataclass(frozen=True)
class ChunkExtraction:
    """One chunk's entities and relations: the unit extractors produce and the cache stores."""

    entities: tuple[ExtractedEntity, ...] = ()
    relations: tuple[ExtractedRelation, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"entities": [asdict(e) for e in self.entities], "relations": [asdict(r) for r in self.relations]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChunkExtraction:
        entities = tuple(
            ExtractedEntity(**{**e, "aliases": tuple(e.get("aliases", ()))}) for e in data.get("entities", ())
        )
        return cls(entities, tuple(ExtractedRelation(**r) for r in data.get("relations", ())))


@dataclass(frozen=True)
class Mention:
    """An entity (by normalised key) named in a chunk `count` times."""

    key: str
    name: str
    type: str
    summary: str
    chunk_id: str
    count: int = 1


@dataclass(frozen=True)
class Link:
    """A relation between two entity keys that chunk `chunk_id` supports with `weight`."""

    source: str
    relation: str
    target: str
    chunk_id: str
    weight: float = 1.0


@dataclass(frozen=True)
class Alias:
    """`alias` (a key) names the entity `key`; learnt from chunk `chunk_id`."""

    alias: str
    key: str
    chunk_id: str


@dataclass(frozen=True)
class DocumentGraph:
    """Everything one document contributes to the graph; `Store.replace_document_graph` swaps it in."""

    document_id: str
    extractor: str
    content_hash: str
    mentions: tuple[Mention, ...] = ()
    links: tuple[Link, ...] = ()
    aliases: tuple[Alias, ...] = ()


@dataclass(frozen=True)
class EntityRecord:
    """A merged node as the store reports it: mentions and documents count its provenance."""

    key: str
    name: str
    type: str
    summary: str
    mentions: int
    documents: int
    aliases: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["aliases"] = list(self.aliases)
        return data


@dataclass(frozen=True)
class RelationRecord:
    """A merged edge: its total weight and the chunks that support it."""

    source: str
    source_name: str
    relation: str
    target: str
    target_name: str
    weight: float
    chunk_ids: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["chunk_ids"] = list(self.chunk_ids)
        return data
