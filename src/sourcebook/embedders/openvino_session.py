"""The model's graph run by OpenVINO with bfloat16 arithmetic (`embedding_precision = "bf16"`).

Why: on a CPU with bfloat16 instructions (AVX-512 BF16, AMX) OpenVINO runs the fp32 weights'
matrix products in bf16 and fuses the encoder's layers itself; the same graph took 0.52x the
CPU time of onnxruntime's fp32 run (`python bench/embedding_precision.py runtimes`), and its
vectors keep a cosine of at least 0.9999 to fp32's (SciFact hybrid nDCG@10 0.7408 against
0.7409), so they are recorded under the fp32 model's name and mix freely with vectors embedded
by onnxruntime. onnxruntime's own int8 graph is slower (0.57x fp32's CPU time), moves vectors
far more (cosine 0.996 at worst) and cost SciFact 0.004 (README "Embedding speed").

`OpenVinoSession` offers the part of onnxruntime's `InferenceSession` that `LocalEmbedder` uses
(`run`, `get_inputs`, `get_outputs`), so batching, pooling and windows stay in one place.
"""

from __future__ import annotations

import functools
import queue
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigurationError

INSTALL_HINT = "bf16 embeddings need OpenVINO: pip install 'sourcebook[openvino]'"


@dataclass(frozen=True)
class Port:
    """A graph input or output as onnxruntime describes it: its name and its shape's rank."""

    name: str
    shape: tuple[Any, ...]


@functools.lru_cache(maxsize=1)
def bf16_available() -> bool:
    """Whether OpenVINO is installed and this CPU runs bfloat16 natively (OpenVINO would
    otherwise compute in fp32, slower than onnxruntime)."""
    try:
        import openvino
    except ImportError:
        return False
    try:
        return "BF16" in openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    except RuntimeError:  # no CPU plugin
        return False


class OpenVinoSession:
    """A compiled model with one infer request per stream; `run` is thread-safe.

    `streams` requests run at once, each on `threads / streams` cores (OpenVINO's streams are
    its equivalent of the two onnxruntime runs sharing one session). The compiled model is
    cached in `cache_dir`, so a second process loads it in a fraction of the compile time."""

    def __init__(self, graph: str | bytes, threads: int, streams: int, cache_dir: Path | None) -> None:
        if not bf16_available():
            raise ConfigurationError(INSTALL_HINT + " and a CPU with bfloat16 instructions (AVX-512 BF16 or AMX)")
        import openvino

        core = openvino.Core()
        if cache_dir is not None:
            try:
                cache_dir.mkdir(parents=True, exist_ok=True)
                core.set_property({"CACHE_DIR": str(cache_dir)})
            except OSError:
                pass  # an unwritable cache: compiled each time
        config = {"INFERENCE_PRECISION_HINT": "bf16", "INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": streams}
        source = core.read_model(graph) if isinstance(graph, bytes) else graph  # bytes: the cache was unwritable
        self._compiled = core.compile_model(source, "CPU", config)
        self._outputs = list(self._compiled.outputs)
        self._requests: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for _ in range(streams):
            self._requests.put(self._compiled.create_infer_request())

    def get_inputs(self) -> list[Port]:
        return [self._port(port) for port in self._compiled.inputs]

    def get_outputs(self) -> list[Port]:
        return [self._port(port) for port in self._outputs]

    @staticmethod
    def _port(port: Any) -> Port:
        rank = port.get_partial_shape().rank
        return Port(port.any_name, (None,) * (rank.get_length() if rank.is_static else 0))

    def run(self, names: Sequence[str] | None, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """Every output, as onnxruntime's `run(None, feeds)` returns them (`names` is always None
        here); `infer` copies them out of the request's buffers, which its next run reuses."""
        request = self._requests.get()
        try:
            result = request.infer(dict(feeds))
            return [result[port] for port in self._outputs]
        finally:
            self._requests.put(request)
