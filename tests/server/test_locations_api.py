"""The HTTP API's hits, citations and chunks name their place (`location`), as the web page's
passage view shows it."""

from __future__ import annotations

from pathlib import Path

from .conftest import ApiFactory


def test_hits_citations_and_chunks_carry_their_location(make_api: ApiFactory, example_docs: Path) -> None:
    api = make_api(auth=False)
    api.kb.add(str(example_docs / "travel-policy.pdf"))
    with api.client() as client:
        hit = client.post("/v1/search", json={"query": "hotel nightly limit in London", "top_k": 1}).json()["hits"][0]
        assert hit["location"] == "3. Accommodation · page 2"
        answer = client.post("/v1/ask", json={"question": "What is the nightly hotel limit in London?"}).json()
        assert answer["citations"] and all(c["location"].endswith(f"page {c['page']}") for c in answer["citations"])
        chunks = client.get(f"/v1/documents/{hit['document_id']}/chunks").json()["chunks"]
        assert [c["location"].rsplit(" · ", 1)[-1] for c in chunks] == [f"page {c['page']}" for c in chunks]
