# make demo | make test | make bench  — each sets up its own virtualenv first.
PY ?= python3
VENV ?= .venv
VPY := $(VENV)/bin/python
BACKENDS ?= cpu sim
PYTEST_ARGS ?=
# cpu and sim run on pytest-xdist workers (the simulator is pure Python and CPU bound; the cpu
# suite took 108 s in one process on CI's 2 cores, about 58 s on two workers): one per core, at
# most 4 (CI has 2); SIM_JOBS=0 runs them in one process
SIM_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)
SIM_XDIST := $(if $(filter-out 0 1,$(SIM_JOBS)),-n $(SIM_JOBS),)

.PHONY: demo test bench bench-compare lint mutate docs check-hip check-cuda check-amd-offline clean sass

# (setup.py builds rocsample/_fastcall.c, the repeated call in C, into the tree: pip install -e)
$(VENV)/.installed-dev: pyproject.toml setup.py rocsample/_fastcall.c
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e '.[dev]'
	touch $@

demo: $(VENV)/.installed-dev
	$(VPY) -m rocsample.demo

# The sim run records every (kernel, argument types) it launches; tools/ptx_check.py then compiles
# each with numba-cuda's real compiler to PTX (no GPU needed), which the simulator never does, and
# check-amd-offline compiles each for AMD gfx1151 and gfx942 through numba-hip (AMD_GATE=0 skips).
SIGS := build/kernel-sigs.json
SIGS64 := build/kernel-sigs-wave64.json
AMD_GATE ?= 1
# the kernels again with 64-thread wavefronts (wave64 AMD parts): block sizes and reductions
WAVE64_TESTS := tests/kernels/test_sampling.py tests/kernels/test_sampling_fast.py \
	tests/kernels/test_sampling_nucleus.py tests/kernels/test_argmax_kernel.py \
	tests/kernels/test_set_rows.py tests/regress/test_fast_finalize_fold_past_256_splits.py
test: $(VENV)/.installed-dev
	@mkdir -p build && rm -f $(SIGS) $(SIGS64)
	@# (the AMD toolchain's setup, mostly downloads on a fresh machine, beside the tests; the
	@# AMD step waits for it on the same lock and sets up again itself if it failed)
	@if [ "$(AMD_GATE)" != 0 ] && echo " $(BACKENDS) " | grep -q " sim "; then \
	  echo "== the AMD toolchain's setup in the background (build/amd-setup.log)"; \
	  mkdir -p $(AMD_HOME) && (PY=$(PY) flock $(AMD_LOCK) tools/amd/setup.sh $(AMD_HOME) \
	    > build/amd-setup.log 2>&1 &); \
	fi
	@$(VPY) -c "import rocsample._fastcall" || { echo "rocsample._fastcall was not built (a C compiler and Python's headers: python3-dev)"; exit 1; }
	@for b in $(BACKENDS); do \
	  echo "== pytest --backend $$b"; t=$$(date +%s); \
	  x=; case $$b in cpu|sim) x="$(SIM_XDIST)";; esac; \
	  if [ $$b = sim ]; then export ROCSAMPLE_RECORD_KERNELS=$(SIGS); fi; \
	  ROCSAMPLE_REQUIRE_FASTCALL=1 $(VPY) -m pytest -q --backend $$b $$x $(PYTEST_ARGS) || exit $$?; \
	  echo "== pytest --backend $$b: $$(( $$(date +%s) - t )) s"; \
	done
	@if echo " $(BACKENDS) " | grep -q " sim "; then \
	  echo "== pytest --backend sim, wave64 blocks (ROCSAMPLE_SIM_WARP=64): the kernel tests"; t=$$(date +%s); \
	  ROCSAMPLE_SIM_WARP=64 ROCSAMPLE_RECORD_KERNELS=$(SIGS64) \
	    $(VPY) -m pytest -q --backend sim $(SIM_XDIST) $(WAVE64_TESTS) $(PYTEST_ARGS) || exit $$?; \
	  echo "== wave64: $$(( $$(date +%s) - t )) s"; \
	  echo "== kernels compiled to PTX (sm_90)"; t=$$(date +%s); \
	  $(VPY) tools/ptx_check.py $(SIGS) --jobs 2 || exit $$?; \
	  echo "== PTX: $$(( $$(date +%s) - t )) s"; \
	  if [ "$(AMD_GATE)" != 0 ]; then \
	    echo "== kernels compiled for AMD gfx1151 and gfx942 (make check-amd-offline)"; t=$$(date +%s); \
	    $(MAKE) --no-print-directory check-amd-offline || exit $$?; \
	    echo "== AMD (the toolchain's setup included): $$(( $$(date +%s) - t )) s"; \
	  fi; \
	fi

# AMD without a GPU (issue #14; README "AMD without a GPU"): tools/amd/setup.sh builds a pinned
# toolchain once per machine in AMD_HOME (its own virtualenv with numba-hip 0.2.1 and the
# rocm-bindings 10.0 packages, Debian's clang/lld 19 and device libraries, the comgr stand-in);
# tools/amd/compile_check.py compiles every distinct signature of the last sim run's records for
# each of AMD_ARCHS, checks the code objects and writes AMD_REPORT; then the hip backend's
# offline tests run in that virtualenv. Code objects are cached in build/amd/cache, keyed by the
# sources.
AMD_HOME ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/rocsample/amd-toolchain
AMD_ARCHS ?= gfx1151 gfx942
AMD_JOBS ?= 2
AMD_REPORT ?= docs/amd-kernels.md
AMD_CACHE ?= $(CURDIR)/build/amd/cache
AMD_LOCK = $(AMD_HOME)/.setup-lock
AMD_TESTS := tests/backends/test_hip_offline.py tests/backends/test_hip_compile_check.py \
	tests/regress/test_float16_logits_unsupported_by_numba_hip.py \
	tests/regress/test_finishing_nucleus_form_used_scratch_on_gfx1151.py \
	tests/regress/test_fold_round_grew_the_nucleus_pass_on_amd.py
check-amd-offline:
	@test -s $(SIGS) || { echo "check-amd-offline: no $(SIGS): run make test (its sim run records the kernels)"; exit 1; }
	@mkdir -p $(AMD_HOME) && PY=$(PY) flock $(AMD_LOCK) tools/amd/setup.sh $(AMD_HOME)
	@if [ -s build/amd-setup.log ]; then grep "^amd toolchain" build/amd-setup.log; rm -f build/amd-setup.log; fi
	@. $(AMD_HOME)/env.sh && export PYTHONPATH=$(CURDIR) ROCSAMPLE_AMD_CACHE=$(AMD_CACHE) && \
	  mkdir -p build/amd && \
	  $$ROCSAMPLE_AMD_PY tools/amd/compile_check.py $(SIGS) $$(test -s $(SIGS64) && echo $(SIGS64)) \
	    $(foreach a,$(AMD_ARCHS),--arch $(a)) --jobs $(AMD_JOBS) --report $(AMD_REPORT) \
	    --json build/amd/results.json && \
	  echo "== the hip backend's offline tests (in the AMD toolchain's virtualenv)" && \
	  ROCSAMPLE_KERNEL_SIGS=$(CURDIR)/$(SIGS) $$ROCSAMPLE_AMD_PY -m pytest -q -p no:cacheprovider \
	    --backend cpu $(AMD_TESTS)

# Registers, spills, shared memory, SASS length and loop bodies of every kernel signature the last
# `make test` sim run launched (tools/sass_stats.py; needs no GPU). KERNELS="partials finalize"
# narrows it.
sass: $(VENV)/.installed-dev
	@test -s $(SIGS) || { echo "no $(SIGS): run make test first"; exit 1; }
	$(VPY) -m pip install -q 'nvidia-cuda-nvcc==13.*' 'nvidia-cuda-cuobjdump==13.*' 'nvidia-cuda-nvdisasm==13.*'
	$(VPY) tools/sass_stats.py $(SIGS) $(foreach k,$(KERNELS),--kernel '$(k)')

# make bench: every suite (or BENCH=bench/test_sampling.py ...), saved with --benchmark-autosave under
# bench/results/<machine>/ (bench/track.py; <machine> from the backend's device name) plus
# bench/results/<machine>.json and its PNG figures. make bench-compare: the same suites against the
# latest saved run (BASELINE=NNNN for another), failing on a median regression beyond THRESHOLD %.
# BENCH_PY=.venv-hip/bin/python (AMD: the check-hip environment) runs them there instead of $(VENV).
BENCH ?= bench
BENCH_ARGS ?= --benchmark-max-time=0.2 --benchmark-min-rounds=5
THRESHOLD ?= 10
BASELINE ?=
BENCH_PY ?=
BPY := $(if $(BENCH_PY),$(BENCH_PY),$(VPY))
BENCH_DEPS := $(if $(BENCH_PY),,$(VENV)/.installed-dev)
bench: $(BENCH_DEPS)
	$(BPY) -m pip install -q -e '.[bench]'
	$(BPY) -m bench.track save -- $(BENCH) -q $(BENCH_ARGS) $(PYTEST_ARGS)
	dev=$$($(BPY) -m bench.track name $(PYTEST_ARGS)); \
	$(BPY) -m bench.plot bench/results/$$dev.json --device $$dev --out bench/results

bench-compare: $(BENCH_DEPS)
	$(BPY) -m pip install -q -e '.[bench]'
	$(BPY) -m bench.track compare --threshold $(THRESHOLD) $(if $(BASELINE),--baseline $(BASELINE)) \
	  -- $(BENCH) -q $(BENCH_ARGS) $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(VPY) -m ruff check rocsample tests bench

# mutmut 3 over rocsample/scratch/ and rocsample/graphs.py against tests/scratch on cpu
# ([tool.mutmut] in pyproject.toml); fails below a 95% score. Survivors: docs/MUTATION.md.
mutate: $(VENV)/.installed-dev
	$(VPY) -m pip install -q 'mutmut>=3.8,<4'
	rm -rf mutants && mkdir mutants
	$(VPY) -m mutmut run > mutants/run.log 2>&1 || (tail -c 4000 mutants/run.log; exit 1)
	$(VPY) -m mutmut results
	$(VPY) tools/mutation_score.py --min 95

docs: $(VENV)/.installed-dev
	$(VPY) -m pip install -q 'pdoc>=14'
	$(VPY) -m rocsample._docs docs/api

# AMD gate: its own environment, since hip-python-interop and cuda-bindings both provide cuda.bindings
HIP_VENV ?= .venv-hip
check-hip:
	$(PY) -m venv $(HIP_VENV)
	$(HIP_VENV)/bin/python -m pip install -q --upgrade pip
	$(HIP_VENV)/bin/python -m pip install -q -e '.[hip]' pytest pytest-benchmark pytest-timeout pytest-xdist hypothesis gguf
	$(HIP_VENV)/bin/python -m rocsample.check --backend hip --report rocsample-check-hip.json

check-cuda:
	$(PY) -m venv $(VENV)-cuda
	$(VENV)-cuda/bin/python -m pip install -q -e '.[cuda,dev]'
	$(VENV)-cuda/bin/python -m rocsample.check --backend cuda --report rocsample-check-cuda.json

clean:
	rm -rf $(VENV) .pytest_cache .benchmarks mutants
