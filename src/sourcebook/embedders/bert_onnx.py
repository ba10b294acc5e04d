"""Build an ONNX graph of a BERT encoder straight from its safetensors weights.

Why: the bundled all-MiniLM-L6-v2 ships as safetensors for PyTorch, and PyTorch is a
multi-GB dependency. Writing the (small, well-known) BERT forward pass as an ONNX
graph lets onnxruntime run the very same weights on the CPU, faster than PyTorch,
with no export step and nothing downloaded. Outputs match sentence-transformers to
about 1e-6 (see tests/embedders/test_local.py).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file

from ..errors import EmbeddingError

OPSET = 17
# Bump when the graph changes, so cached graphs (embedders/local.py) are rebuilt.
GRAPH_VERSION = 2  # 2: token_mask and window_rows (windows pooled under confined attention)
# Bump when the quantization recipe changes (it is part of the int8 graph's cache key).
INT8_VERSION = 4  # 4: QAttention and the attention output and FFN input MatMuls dynamic, the FFN output MatMulNBits
# Inputs per weight scale in the int8 graph (quantize_int8). Blocks of 32 were hardly more accurate
# (cosine to fp32 0.9998 against 0.9997) and their kernel 1.4x slower (bench/embedding_precision.py).
INT8_BLOCK = 128
MS_DOMAIN = "com.microsoft"
# The FFN output MatMuls' weights (build_bert_onnx names them), which the int8 graph keeps in
# MatMulNBits: their input is the GELU's output, whose outliers one scale per tensor cannot resolve.
FFN_OUTPUT = re.compile(r"encoder\.layer\.\d+\.output\.dense\.wt")


class _GraphBuilder:
    """Accumulates nodes and initializers, naming intermediate values uniquely."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, inputs: list[str], domain: str = "", **attrs: object) -> str:
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], domain=domain or None, **attrs))
        return out

    def weight_t(self, weights: dict[str, np.ndarray], prefix: str) -> str:
        """A PyTorch Linear weight, stored (out, in), transposed for x @ W."""
        return self.const(f"{prefix}.wt", np.ascontiguousarray(weights[f"{prefix}.weight"].T))

    def skip_layer_norm(self, x: str, residual: str, weights: dict[str, np.ndarray], prefix: str, eps: float) -> str:
        """LayerNorm(x @ W + b + residual): a BERT sub-layer's output projection and norm, fused."""
        projected = self.op("MatMul", [x, self.weight_t(weights, f"{prefix}.dense")])
        gamma = self.const(f"{prefix}.ln_w", weights[f"{prefix}.LayerNorm.weight"])
        beta = self.const(f"{prefix}.ln_b", weights[f"{prefix}.LayerNorm.bias"])
        bias = self.const(f"{prefix}.dense_b", weights[f"{prefix}.dense.bias"])
        return self.op(
            "SkipLayerNormalization", [projected, residual, gamma, beta, bias], domain=MS_DOMAIN, epsilon=eps
        )

    def layer_norm(self, x: str, weights: dict[str, np.ndarray], prefix: str, eps: float) -> str:
        scale = self.const(f"{prefix}.ln_w", weights[f"{prefix}.weight"])
        bias = self.const(f"{prefix}.ln_b", weights[f"{prefix}.bias"])
        return self.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=eps)


def _strip_prefix(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Some checkpoints name tensors 'bert.encoder...'; normalise to 'encoder...'."""
    return {k.removeprefix("bert."): v for k, v in weights.items()}


def _encoder_layer(
    g: _GraphBuilder, w: dict[str, np.ndarray], p: str, x: str, attention_mask: str, heads: int, eps: float
) -> str:
    """One BERT layer on `x` with `attention_mask` (rows x width x width int32, 1 = may attend);
    a layer built twice (the last one) shares its weights."""
    qkv = [f"{p}.attention.self.{name}" for name in ("query", "key", "value")]
    qkv_w = g.const(f"{p}.qkv_w", np.ascontiguousarray(np.concatenate([w[f"{n}.weight"] for n in qkv]).T))
    qkv_b = g.const(f"{p}.qkv_b", np.concatenate([w[f"{n}.bias"] for n in qkv]))
    attended = g.op("Attention", [x, qkv_w, qkv_b, attention_mask], domain=MS_DOMAIN, num_heads=heads)
    x = g.skip_layer_norm(attended, x, w, f"{p}.attention.output", eps)
    inner = g.op("MatMul", [x, g.weight_t(w, f"{p}.intermediate.dense")])
    gelu = g.op("BiasGelu", [inner, g.const(f"{p}.intermediate.b", w[f"{p}.intermediate.dense.bias"])], domain=MS_DOMAIN)
    return g.skip_layer_norm(gelu, x, w, f"{p}.output", eps)


def build_bert_onnx(model_dir: Path) -> bytes:
    """Serialized ONNX model: input_ids, attention_mask (rows x width int64), token_mask (rows x
    width x width int32) and window_rows (int64, maybe empty) -> last_hidden_state and window_hidden_state."""
    config_path = model_dir / "config.json"
    weights_path = model_dir / "model.safetensors"
    if not config_path.exists() or not weights_path.exists():
        raise EmbeddingError(f"{model_dir}: expected config.json and model.safetensors for a BERT model")
    config = json.loads(config_path.read_text())
    if config.get("model_type") not in {"bert", None}:
        raise EmbeddingError(
            f"{model_dir}: model_type {config.get('model_type')!r} is not supported from safetensors; "
            "export it to ONNX (model.onnx next to tokenizer.json) and point embedding_model at that folder"
        )
    w = _strip_prefix(load_file(str(weights_path)))
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    eps = float(config.get("layer_norm_eps", 1e-12))

    g = _GraphBuilder()
    ids, mask, token_mask, window_rows = "input_ids", "attention_mask", "token_mask", "window_rows"
    word = g.const("word_emb", w["embeddings.word_embeddings.weight"])
    pos = g.const("pos_emb", w["embeddings.position_embeddings.weight"])
    token_type = g.const("type_emb0", w["embeddings.token_type_embeddings.weight"][0])
    seq_len = g.op("Shape", [ids], start=1, end=2)
    zero = g.const("zero1", np.array([0], dtype=np.int64))
    positions = g.op("Slice", [pos, zero, seq_len])
    x = g.op("Add", [g.op("Add", [g.op("Gather", [word, ids], axis=0), positions]), token_type])
    x = g.layer_norm(x, w, "embeddings.LayerNorm", eps)

    # onnxruntime's fused CPU kernels (contrib domain "com.microsoft"): one Attention node
    # per layer instead of ~15 primitive ops, and bias/residual folded into layer norms.
    # Measured here: about 1.6x the throughput of the same graph in primitive ops.
    # Which tokens each token attends to is an input (`token_mask`, rows x width x width): all
    # real tokens for a plain text, the window's neighbourhood for a chunk whose sentence windows
    # are pooled from this pass (late_chunking.py). The rows named by `window_rows` run the last
    # layer twice, with full attention (the chunk's own vector) and with `token_mask` (their
    # windows' states, `window_hidden_state`); with no window rows the graph is the plain encoder.
    axis1, axis2 = g.const("axis1", np.array([1], dtype=np.int64)), g.const("axis2", np.array([2], dtype=np.int64))
    full_mask = g.op("Cast", [g.op("Mul", [g.op("Unsqueeze", [mask, axis2]), g.op("Unsqueeze", [mask, axis1])])], to=TensorProto.INT32)
    layers = int(config["num_hidden_layers"])
    for i in range(layers - 1):
        x = _encoder_layer(g, w, f"encoder.layer.{i}", x, token_mask, heads, eps)
    rows = g.op("Shape", [ids], start=0, end=1)
    last_in = g.op("Concat", [x, g.op("Gather", [x, window_rows], axis=0)], axis=0)
    last_mask = g.op("Concat", [full_mask, g.op("Gather", [token_mask, window_rows], axis=0)], axis=0)
    y = _encoder_layer(g, w, f"encoder.layer.{layers - 1}", last_in, last_mask, heads, eps)
    axis0, end = g.const("axis0", np.array([0], dtype=np.int64)), g.const("end", np.array([2**62], dtype=np.int64))
    g.nodes.append(helper.make_node("Slice", [y, zero, rows, axis0], ["last_hidden_state"]))
    g.nodes.append(helper.make_node("Slice", [y, rows, end, axis0], ["window_hidden_state"]))
    graph = helper.make_graph(
        g.nodes,
        "bert_encoder",
        [
            helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info(mask, TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info(token_mask, TensorProto.INT32, ["batch", "seq", "seq"]),
            helper.make_tensor_value_info(window_rows, TensorProto.INT64, ["windowed"]),
        ],
        [
            helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", hidden]),
            helper.make_tensor_value_info("window_hidden_state", TensorProto.FLOAT, ["windowed", "seq", hidden]),
        ],
        initializer=g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MS_DOMAIN, 1)])
    model.ir_version = 8
    return model.SerializeToString()


def _blockwise_int8(weight: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """`weight` (K, N) as MatMulNBits stores 8-bit weights: for each output column, blocks of
    `block` inputs, each with its own scale (symmetric: the implied zero point is 128).

    Returns the quantized bytes, shaped (N, blocks, block), and the scales, (N, blocks).
    """
    rows, columns = weight.shape
    blocks = -(-rows // block)
    padded = np.zeros((blocks * block, columns), np.float32)
    padded[:rows] = weight
    by_block = padded.T.reshape(columns, blocks, block)
    scales = np.abs(by_block).max(axis=2) / 127.0
    safe = np.where(scales == 0.0, 1.0, scales)[..., None]
    quantized = np.clip(np.rint(by_block / safe), -127, 127) + 128
    return quantized.astype(np.uint8), scales.astype(np.float32)


def quantize_int8(
    graph: bytes,
    block: int = INT8_BLOCK,
    dynamic_ops: Sequence[str] = ("MatMul", "Attention"),
    blockwise: re.Pattern[str] | None = FFN_OUTPUT,
) -> bytes:
    """`graph` (from `build_bert_onnx`) with every projection's weights in 8 bits, run by int8 kernels.

    First the `dynamic_ops` (Attention becomes QAttention) are quantized by onnxruntime's
    `quantize_dynamic`: per-channel weights, and the activations in 8 bits with one scale per
    run and tensor, the fastest int8 kernels here. Then every MatMul left in fp32, the ones whose
    weight `blockwise` names, becomes a MatMulNBits node (8-bit weights in blocks of `block`
    inputs, each block its own scale) at accuracy_level 4, which quantizes its activations per
    row and block (int8 dot products, VNNI here); an Attention `blockwise` names stays fp32.
    The FFN output MatMuls take that path (`FFN_OUTPUT`): the GELU's output has outliers one
    scale per tensor cannot resolve, so dynamic int8 there too (INT8_VERSION 1: all dynamic) gave
    cosine 0.995 to fp32 and lost 0.008 vector nDCG@10 on SciFact. The default (INT8_VERSION 4)
    keeps cosine 0.9977, runs the model about 1.75x as fast as fp32 (CPU time) and kept full
    SciFact nDCG@10 within 0.004 of fp32's. INT8_VERSION 3 (the FFN input MatMuls MatMulNBits
    too) kept 0.9986 at about 1.5x; all MatMulNBits with Attention fp32 (`dynamic_ops=()`,
    INT8_VERSION 2) 0.9997 at 1.25x.
    The price: a text's vector moves a little with its batch (the per-run scales), and with
    sentence windows SciFact lost 0.005-0.008 when queries were int8 too, so queries go through
    the fp32 graph by default (`LocalEmbedder.embed_queries`). README
    "Embedding speed" has the candidates' figures and their full SciFact scores.
    """
    if dynamic_ops:
        graph = _quantize_dynamic(graph, dynamic_ops, blockwise)
    model = onnx.load_from_string(graph)
    weights = {tensor.name: tensor for tensor in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type != "MatMul" or node.input[1] not in weights:
            continue
        source = weights.pop(node.input[1])
        model.graph.initializer.remove(source)
        weight = numpy_helper.to_array(source)
        quantized, scales = _blockwise_int8(weight, block)
        packed, scale = f"{source.name}.int8", f"{source.name}.scales"
        model.graph.initializer.extend([numpy_helper.from_array(quantized, packed), numpy_helper.from_array(scales, scale)])
        replacement = helper.make_node(
            "MatMulNBits", [node.input[0], packed, scale], list(node.output), domain=MS_DOMAIN,
            K=weight.shape[0], N=weight.shape[1], bits=8, block_size=block, accuracy_level=4,
        )
        node.CopyFrom(replacement)
    return model.SerializeToString()


def _quantize_dynamic(graph: bytes, ops: Sequence[str], keep_float: re.Pattern[str] | None) -> bytes:
    """`graph` with its `ops` dynamically quantized (per-channel int8 weights), except the nodes
    whose weight (second input) `keep_float` names."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load_from_string(graph)
    excluded = []
    for node in model.graph.node:
        node.name = node.name or node.output[0]
        if keep_float and len(node.input) > 1 and keep_float.fullmatch(node.input[1]):
            excluded.append(node.name)
    # The graph is written with onnxruntime's fused ops already, which is what the quantizer's
    # pre-processing would do; the mark keeps it from logging a warning that says otherwise.
    helper.set_model_props(model, {"onnx.quant.pre_process": "onnxruntime.quant"})
    with tempfile.TemporaryDirectory(prefix="sourcebook-int8-") as folder:
        target = Path(folder) / "int8.onnx"
        quantize_dynamic(
            model, target, op_types_to_quantize=list(ops), per_channel=True, weight_type=QuantType.QInt8,
            nodes_to_exclude=excluded, extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )
        return target.read_bytes()


def graph_bytes(bert_dir: Path, precision: str) -> bytes:
    """The graph of the BERT in `bert_dir` at `precision` ("int8" quantized, else fp32)."""
    graph = build_bert_onnx(bert_dir)
    return quantize_int8(graph) if precision == "int8" else graph


def write_graph(bert_dir: Path, precision: str, target: Path) -> None:
    """`graph_bytes` written to `target` through a temporary file and a rename: a reader never
    sees half a graph, and two writers of one target never mix their bytes."""
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    partial.write_bytes(graph_bytes(bert_dir, precision))
    partial.replace(target)


if __name__ == "__main__":  # embedders/local.py builds a graph in a child process: BERT_DIR PRECISION TARGET
    write_graph(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
