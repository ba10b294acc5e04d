"""The deterministic extractor and the name normalisation it relies on."""

from __future__ import annotations

import pytest

from sourcebook.graph.normalize import entity_key, expands, is_acronym
from sourcebook.graph.offline import RELATED, extract_offline
from sourcebook.stopwords import STOPWORDS


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Keel workers", "keel worker"), ("the Keel Workers", "keel worker"), ("alert rules", "alert rule"),
        ("AWS", "aws"), ("APIs", "api"), ("readings.raw", "readings.raw"), ("status", "status"),
        ("Kubernetes", "kubernetes"), ("policies", "policy"), ("switches", "switch"), ("“Safe Harbour”", "safe harbour"),
        ("  ", ""),
    ],
)
def test_entity_keys_merge_case_plurals_and_articles(name: str, key: str) -> None:
    assert entity_key(name) == key


def test_acronyms_and_their_expansions() -> None:
    assert is_acronym("DCP") and is_acronym("SEV1") and is_acronym("SREs") and not is_acronym("Go") and not is_acronym("Q3")
    assert expands("DCP", "Data Collection Pipeline".split())
    assert expands("RPO", "recovery point objective".split())
    assert expands("AWS", "Amazon Web Services".split()) and not expands("AWS", "Amazon Services".split())


def nodes(text: str, headings: tuple[str, ...] = ()) -> dict[str, tuple[str, bool]]:
    return {e.name: (e.type, e.weak) for e in extract_offline(text, headings).entities}


def test_names_acronyms_and_code_identifiers_are_nodes() -> None:
    found = nodes(
        "Tidewater receives batches from the Edge gateway. It publishes readings to the Kafka topic "
        "`readings.raw` on AWS in eu-central-1. Tobias Lindqvist wrote run_migrations() and the --dry-run flag. "
        "Mail it-help@northwind.example or see https://status.example.org/beacon."
    )
    assert found["Kafka"] == ("name", False) and found["Edge"] == ("name", False)
    assert found["Tobias Lindqvist"] == ("name", False)
    assert found["AWS"] == ("acronym", False)
    for code in ("readings.raw", "eu-central-1", "run_migrations()", "--dry-run", "it-help@northwind.example",
                 "https://status.example.org/beacon"):
        assert found[code] == ("code", False), code
    # a capitalised word opening a sentence, with no evidence it is a name, is only a candidate
    assert found["Tidewater"] == ("name", True)


def test_sentence_openings_confirmed_mid_sentence_are_names() -> None:
    found = nodes("Driftwood stores readings. Keel workers write to Driftwood every second.")
    assert found["Driftwood"] == ("name", False)


def test_no_stopword_calendar_or_shouted_junk() -> None:
    text = (
        "ACTION ITEMS\n\n2. HARBOR-DB UPGRADE\n\nThe team met on Tuesday 14 May in London. Every week, "
        "the SRE team reviews alerts. It is what it is."
    )
    names = {e.name for e in extract_offline(text).entities}
    assert not names & {"ACTION", "ITEMS", "ACTION ITEMS", "HARBOR-DB", "UPGRADE", "Tuesday", "May", "It", "The"}
    assert "London" in names and "SRE" in names
    for entity in extract_offline(text).entities:
        assert entity_key(entity.name) not in STOPWORDS


def test_acronym_definitions_become_aliases() -> None:
    extraction = extract_offline(
        "Internally we call it the DCP, short for Data Collection Pipeline. The RPO (recovery point objective) "
        "is 15 minutes. The Incident Commander (IC) leads."
    )
    aliases = {e.name: e.aliases for e in extraction.entities if e.aliases}
    assert aliases == {"Data Collection Pipeline": ("DCP",), "recovery point objective": ("RPO",), "Incident Commander": ("IC",)}


def test_relations_are_labelled_with_the_words_between_and_weighted_per_sentence() -> None:
    extraction = extract_offline(
        "Tidewater publishes readings to Kafka. Tidewater publishes readings to Kafka again. "
        "Keel, Kafka and Driftwood are services."
    )
    relations = {(r.source, r.relation, r.target): r.weight for r in extraction.relations}
    assert relations[("Tidewater", "publishes readings to", "Kafka")] == 2.0
    assert relations[("Keel", RELATED, "Kafka")] == 1.0  # a comma says nothing
    assert relations[("Keel", RELATED, "Driftwood")] == 1.0  # not adjacent: co-occurrence only


def test_key_phrases_are_weak_candidates() -> None:
    found = nodes("Each gateway has its own client certificate, rotated every 90 days.")
    assert found["client certificate"] == ("phrase", True)
    assert "days" not in {name.split()[-1] for name in found}
