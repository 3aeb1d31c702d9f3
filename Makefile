# make test: install from the lock if needed, lint, run the tests.   make all: every table and report.
VENV ?= .venv
PYTHON ?= python3
BIN := $(abspath $(VENV))/bin
STAMP := $(VENV)/.installed-stamp
LOCK := requirements.lock
COMPILE := pip-compile --quiet --allow-unsafe --extra=dev --strip-extras \
	--no-emit-index-url --no-emit-find-links --output-file=$(LOCK) pyproject.toml
export PATH := $(BIN):$(PATH)
export HF_HUB_OFFLINE := 1

.PHONY: install lock lock-upgrade lint format test repro-check cluster-check fragility all pull dvc-yaml benchmark clean

# One pip call installs exactly the lock (--no-deps: nothing outside it enters), then pip check.
$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --no-deps -r $(LOCK) -e .
	$(BIN)/python -m pip check
	touch $(STAMP)

install: $(STAMP)

# After editing pyproject.toml: re-resolve, keeping every pin that still fits.
lock: install
	$(COMPILE)

# Move every pin to its newest release; then `make all` and commit dvc.lock (outputs may change).
lock-upgrade: install
	$(COMPILE) --upgrade

lint: install
	python -m reprolab.lockfile
	ruff check src tests benchmarks workflow/scripts
	ruff format --check src tests benchmarks workflow/scripts
	snakefmt --check Snakefile workflow/rules
	snakemake --lint
	reprolab dvc-export --check

format: install
	ruff check --fix src tests benchmarks workflow/scripts
	ruff format src tests benchmarks workflow/scripts
	snakefmt Snakefile workflow/rules

# Unit tests on both cores (pytest-xdist; a test file stays on one worker, so its module fixtures
# are made once), then the workflow tier, which uses both cores itself: the ci-scale workflow of
# every study (forced again for the studies this commit touched, and killed midway), SLURM, the
# DVC round trip, and the smoke reproduction of the stages this commit touched.
test: lint
	python -m pytest -m "not integration" -n 2 --dist loadfile
	python -m pytest -m integration

# The smoke `dvc repro` of every stage, compared with the committed dvc.lock.
repro-check: install
	REPROLAB_REPRO_STAGES=all python -m pytest tests/workflow/test_dvc.py -k smoke_repro --timeout=0 -s

# The cluster profile on a one-node SLURM cluster started here (apt-get installs slurm-wlm and
# munge when missing: needs root); `make test` runs the same test.
cluster-check: install
	python -m pytest tests/workflow/test_cluster.py -s

all: install
	snakemake --cores 2 all
	reprolab run-times

# Restore data and results from the DVC remote, then order their file times along the DAG
# (DVC writes them in no particular order; Snakemake would rerun a job whose input looks newer).
pull: install
	dvc pull
	snakemake --touch --cores 1 all

dvc-yaml: install
	reprolab dvc-export

# TorchCodec, the anchor of video_frames.py, is a benchmark-only install (benchmarks/requirements.txt
# says which FFmpeg libraries it loads); without them that benchmark says why and goes on.
benchmark: install
	python -m pip install -q -r benchmarks/requirements.txt
	python benchmarks/pipeline_overhead.py
	python benchmarks/wsi_tiling.py --runs 5
	python benchmarks/video_frames.py
	python benchmarks/video_batch.py
	python benchmarks/cpu_kernels.py
	python benchmarks/strap_inference.py
	python benchmarks/nicer_condensation.py
	python benchmarks/hiccr_overhead.py
	python benchmarks/nas_overhead.py
	python benchmarks/ngpt_fp4_overhead.py
	python benchmarks/bidrive_latency.py
	python benchmarks/normlift_lifting.py
	python benchmarks/norm_enforcement_mechanisms.py

clean:
	git clean -fdX results data logs .snakemake  # produced files only: committed results stay

# Claims that survive floating-point noise: run every study again at a second CPU kernel level
# in a worktree of HEAD, then record which claim outcomes flip (results/<id>/fragility.json, a
# dependency of the study's DVC stage). With the outputs in place (`make pull`), `make all` then
# reruns only the summaries, reports and index, which mark the flipped checks fragile, and
# `dvc commit -f` records them in dvc.lock (`dvc repro` would rerun every study from scratch:
# DVC deletes a stage's outputs before it runs the stage). numpy's OpenBLAS, which the workflow
# leaves to the machine, runs the `SECOND_OPENBLAS` core type there, so that numpy-only studies
# see other rounding too. On a processor of the other vendor than the one that made the
# results, the pinned level itself is a second run:
#   make fragility SECOND_KERNELS='{torch: avx2, mkl: AVX2, onednn: AVX2}' SECOND_OPENBLAS=
# (an empty SECOND_OPENBLAS leaves OpenBLAS to the machine, as the workflow does); on the same
# vendor `reprolab fragility` refuses that run, which would only repeat the results.
SECOND_KERNELS ?= {torch: default, mkl: AVX, onednn: AVX}
SECOND_OPENBLAS ?= Haswell
SECOND_DIR ?= $(abspath ../reprolab-second-kernels)
fragility: install
	rm -rf $(SECOND_DIR) && git worktree prune
	git worktree add --detach $(SECOND_DIR) HEAD
	sed -i 's/^cpu_kernels: .*/cpu_kernels: $(SECOND_KERNELS)/' $(SECOND_DIR)/params.yaml
	cd $(SECOND_DIR) && $(if $(SECOND_OPENBLAS),OPENBLAS_CORETYPE=$(SECOND_OPENBLAS)) PYTHONPATH=$(SECOND_DIR)/src snakemake --cores 2 all
	reprolab fragility $(SECOND_DIR)/results
	reprolab dvc-export
