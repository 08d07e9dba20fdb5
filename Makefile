# Fresh Debian machine: `make run` (set up + run the default sweep), `make test` (set up + tests).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.perfsweep-installed
CONFIG ?= config/config.yaml
CORES  ?= $(shell nproc)

.PHONY: setup run test test-fast dryrun-paper paper-ms2 paper-hofinger paper-mdanalysis clean-results

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: setup
	$(BIN)/perfsweep run $(CONFIG) --cores $(CORES)

test: setup
	$(BIN)/python -m pytest -q

# test-fast: every test that needs no real sweep, MPI run or cluster (tests/README.md)
test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow and not slurm"

dryrun-paper: setup
	$(BIN)/snakemake -n -q --configfile config/ms2-paper.yaml

# Paper reproductions, one command each (see docs/how-to/papers.md)
paper-ms2: setup
	$(BIN)/perfsweep run config/ms2-paper-small.yaml --cores $(CORES)

paper-hofinger: setup
	$(BIN)/snakemake paper_hofinger --cores 1

paper-mdanalysis: setup
	$(BIN)/snakemake paper_mdanalysis --cores 1

clean-results:
	@echo "results/ holds raw run records; remove it by hand if you really mean it: rm -rf results"
