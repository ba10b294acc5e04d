"""The knowledge graph: entities and relations extracted from chunks, kept with their provenance.

- `models`: value types (per-chunk extractions, a document's graph, entity and relation records);
- `normalize`: entity names to merge keys (case, plurals, articles);
- `offline`: the deterministic extractor (no LLM);
- `llm`: extraction by an LLM with structured output, validated with pydantic;
- `builder`: extraction cached by chunk hash, merged per document and written to the store;
- `search`: graph-augmented retrieval (entities in the question -> linked chunks);
- `export`: JSON and GraphML.

This module imports nothing heavy, so `stores.base` can import `graph.models`.
"""
