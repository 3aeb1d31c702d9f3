# make test: install if needed, lint, run the tests.   make all: every table and report (smoke).
VENV ?= .venv
PYTHON ?= python3
BIN := $(abspath $(VENV))/bin
STAMP := $(VENV)/.installed-stamp
export PATH := $(BIN):$(PATH)
export HF_HUB_OFFLINE := 1

.PHONY: install lint format test repro-check all dvc-yaml benchmark clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

lint: install
	ruff check src tests benchmarks workflow/scripts
	ruff format --check src tests benchmarks workflow/scripts
	snakefmt --check Snakefile workflow/rules
	snakemake --lint

format: install
	ruff check --fix src tests benchmarks workflow/scripts
	ruff format src tests benchmarks workflow/scripts
	snakefmt Snakefile workflow/rules

test: lint
	python -m pytest

# The smoke `dvc repro` of every stage (CI reproduces a subset): reproduces the committed lock.
repro-check: install
	REPROLAB_REPRO_STAGES=all python -m pytest tests/workflow/test_dvc.py -k smoke_repro

all: install
	snakemake --cores 2 all

dvc-yaml: install
	reprolab dvc-export

benchmark: install
	python benchmarks/pipeline_overhead.py
	python benchmarks/wsi_tiling.py
	python benchmarks/video_frames.py

clean:
	rm -rf results data/ndfa logs .snakemake
