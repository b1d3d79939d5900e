# Two entry points: `make demo` and `make test`. Both create the virtual environment
# and install what they need, so they work on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CTX := $(VENV)/bin/ctxselect
DEMO_INDEX := .ctxselect/demo

.PHONY: demo test bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0  # first: the CPU wheel, not pip's multi-GB CUDA build
	$(PY) -m pip install --quiet -e '.[test,bench,dev,plot,mcp,dense,rerank,milvus,ray,code,langchain,llamaindex,pdf,fast]'
	touch $@

demo: $(VENV)/.installed
	$(CTX) index docs --index $(DEMO_INDEX)
	$(CTX) select "How do I split Markdown by headings?" --budget 1000 --index $(DEMO_INDEX)
	$(CTX) select "What is the knee of a budget sweep?" --budget 1000 --index $(DEMO_INDEX)
	$(CTX) lab --corpus docs --queries docs/queries.jsonl

test: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/mypy
	$(PY) -m pytest

docs/cli.md: $(VENV)/.installed src/ctxselect/interfaces/cli/*.py
	$(PY) -m ctxselect.interfaces.cli.docgen > $@

bench: $(VENV)/.installed
	$(PY) bench/bm25_peers.py

clean:
	rm -rf $(VENV) .ctxselect .pytest_cache .hypothesis
