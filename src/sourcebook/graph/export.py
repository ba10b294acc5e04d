"""The graph as JSON (for scripts and the web page) and GraphML (for Gephi, yEd, Cytoscape, networkx).

JSON: {"nodes": [{"id", "name", "type", "summary", "mentions", "documents", "aliases"}],
"edges": [{"source", "target", "relation", "weight", "chunk_ids"}]}; ids are entity keys.
GraphML is written with the standard library (no networkx needed to export).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from .models import EntityRecord, RelationRecord

FORMATS = ("json", "graphml")
_NODE_KEYS = (("name", "string"), ("type", "string"), ("summary", "string"), ("mentions", "int"), ("documents", "int"),
              ("aliases", "string"))
_EDGE_KEYS = (("relation", "string"), ("weight", "double"), ("chunk_ids", "string"))


def graph_json(entities: Sequence[EntityRecord], relations: Sequence[RelationRecord]) -> dict[str, Any]:
    nodes = [{"id": e.key, **{k: v for k, v in e.to_dict().items() if k != "key"}} for e in entities]
    known = {e.key for e in entities}
    edges = [
        {"source": r.source, "target": r.target, "relation": r.relation, "weight": r.weight, "chunk_ids": list(r.chunk_ids)}
        for r in relations if r.source in known and r.target in known
    ]
    return {"nodes": nodes, "edges": edges}


def graph_graphml(entities: Sequence[EntityRecord], relations: Sequence[RelationRecord]) -> str:
    data = graph_json(entities, relations)
    root = ET.Element("graphml", xmlns="http://graphml.graphdrawing.org/xmlns")
    for scope, keys in (("node", _NODE_KEYS), ("edge", _EDGE_KEYS)):
        for name, kind in keys:
            ET.SubElement(root, "key", {"id": f"{scope[0]}_{name}", "for": scope, "attr.name": name, "attr.type": kind})
    graph = ET.SubElement(root, "graph", id="sourcebook", edgedefault="directed")
    for node in data["nodes"]:
        element = ET.SubElement(graph, "node", id=node["id"])
        for name, _ in _NODE_KEYS:
            value = node[name]
            ET.SubElement(element, "data", key=f"n_{name}").text = " | ".join(value) if isinstance(value, list) else str(value)
    for i, edge in enumerate(data["edges"]):
        element = ET.SubElement(graph, "edge", id=f"e{i}", source=edge["source"], target=edge["target"])
        for name, _ in _EDGE_KEYS:
            value = edge[name]
            ET.SubElement(element, "data", key=f"e_{name}").text = " ".join(value) if isinstance(value, list) else str(value)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
