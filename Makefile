# kbx: `make run` builds and evaluates the bundled expert kernels (GPU, or the CPU self-check
# without one); `make test` runs every test. Both install what they need first.
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
PYTHON := $(or $(KBX_PYTHON),$(shell bash scripts/setup.sh | tail -n 1))
KBX = $(BUILD)/kbx
# Both builds compile each part's sources in a few batches (CMakeLists.txt, KBX_UNITY; UNITY=OFF
# compiles each file alone) and use Ninja when it is installed (scripts/setup.sh installs it) and
# the build folder is new: Ninja compiles a part's files without waiting for the parts it links.
UNITY ?= ON
generator = $(if $(wildcard $(1)/CMakeCache.txt),,$(if $(shell command -v ninja),-G Ninja))
# pytest-xdist (when the Python has it): the tests run in PYTEST_WORKERS processes, a module's
# tests in one of them (tests/python/conftest.py), since many wait on subprocesses and timeouts
# more than they compute; the tests marked alone run afterwards, by themselves.
PYTEST_WORKERS ?= 3
XDIST = $(if $(shell $(PYTHON) -c 'import xdist' 2>/dev/null && echo y),-n $(PYTEST_WORKERS) --dist loadgroup)

# The tests run many CPU workers side by side on few cores, where torch's own threads (OpenMP,
# one per core) spin against each other: the CPU calibration's test took 110 s in CI instead of
# 12 s. Every test process, and the workers kbx starts (it passes OMP_NUM_THREADS on), uses one.
TEST_ENV = OMP_NUM_THREADS=1 KBX_PYTHON=$(PYTHON)

.PHONY: build build-test build-asan-tests run test test-cpp test-asan test-tsan test-python test-slurm check-suite check-expert format check-format clean

configure = cmake $(call generator,$(BUILD)) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release \
  -DKBX_WERROR=ON -DKBX_UNITY=$(UNITY) >/dev/null

build:
	$(configure)
	cmake --build $(BUILD) -j$(JOBS)

# What `make test` needs of the release build: kbx, the probe's tools and tests (probe_tests
# depends on libkbx_probe.so where CUPTI is found), every part's one-way-flow link check. The
# unit tests (kbx_tests) are built and run under the sanitizers only (test-asan): compiling them a
# second time, optimized, was a fifth of the release build and ran the same tests.
PARTS = common suite store sandbox verdict timing stats report plan dist gen sched cli
TEST_TARGETS = kbx kbx_probe_dump probe_tests $(addprefix kbx_flow_,$(PARTS))
build-test:
	$(configure)
	cmake --build $(BUILD) -j$(JOBS) --target $(TEST_TARGETS)

run: build
	@KBX_PYTHON=$(PYTHON) bash scripts/run_main.sh $(KBX)

# The last three side by side (each keeps its output together, printed when it ends): the suite's
# check keeps about one core busy and the Slurm test mostly waits on its daemons, while the
# experts' check fills both; nothing there times anything, and each has its own scratch folders.
test: check-format build-test test-cpp test-asan test-python
	$(MAKE) --no-print-directory -j3 --output-sync=target PYTHON=$(PYTHON) check-suite check-expert \
	  test-slurm

# The probe's tests on the release build (the unit tests of src/ run in test-asan).
test-cpp: build-test
	ctest --test-dir $(BUILD)/probe --output-on-failure -j$(JOBS)

# The sanitizers' build with -g1 (line tables, no variables' debug information): the reports keep
# their file:line frames, and the build takes about an eighth less compiling. Its tests run in
# JOBS shards side by side (gtest's GTEST_TOTAL_SHARDS: each test in exactly one shard).
build-asan-tests:
	cmake $(call generator,$(ASAN_BUILD)) -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DKBX_SANITIZE=ON -DKBX_UNITY=$(UNITY) >/dev/null
	cmake --build $(ASAN_BUILD) -j$(JOBS) --target kbx_tests

test-asan: build-asan-tests
	@pids=""; for i in $$(seq 0 $$(($(JOBS) - 1))); do \
	  ASAN_OPTIONS=detect_leaks=0 GTEST_TOTAL_SHARDS=$(JOBS) GTEST_SHARD_INDEX=$$i \
	    $(ASAN_BUILD)/kbx_tests --gtest_brief=1 & pids="$$pids $$!"; \
	done; rc=0; for p in $$pids; do wait $$p || rc=1; done; exit $$rc

# Not part of `make test` (about 6 minutes on two cores): kbx built under ThreadSanitizer, then the
# Python tests that drive its threads hardest (the reference pipeline, its lanes and caches, the
# quiet host); a data race it reports fails the target. Session 46: none.
TSAN_BUILD ?= build-tsan
TSAN_TESTS = test_reference_oom.py test_ref_cache.py test_eval_options.py test_lean_inputs.py \
  test_reference_warm.py test_resume.py test_quiet_host.py test_baseline_contention.py
test-tsan:
	cmake $(call generator,$(TSAN_BUILD)) -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=Debug \
	  -DKBX_UNITY=$(UNITY) -DCMAKE_CXX_FLAGS="-fsanitize=thread -g1 -O1" \
	  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
	  >/dev/null
	cmake --build $(TSAN_BUILD) -j$(JOBS) --target kbx
	rm -rf $(TSAN_BUILD)/reports && mkdir -p $(TSAN_BUILD)/reports
	cd tests/python && $(TEST_ENV) KBX_BIN=$(abspath $(TSAN_BUILD))/kbx \
	  TSAN_OPTIONS="halt_on_error=0 log_path=$(abspath $(TSAN_BUILD))/reports/tsan" \
	  $(PYTHON) -m pytest -q -p no:xdist $(TSAN_TESTS)
	@if ls $(TSAN_BUILD)/reports/tsan* >/dev/null 2>&1; then \
	  echo "ThreadSanitizer reports:"; head -n 60 $(TSAN_BUILD)/reports/tsan*; exit 1; fi
	@echo "ThreadSanitizer: no report"

test-python: build-test
	$(TEST_ENV) KBX_BIN=$(abspath $(KBX)) $(PYTHON) -m pytest -q $(XDIST) -m "not alone" --durations=25 \
	  tests/python
	$(TEST_ENV) KBX_BIN=$(abspath $(KBX)) $(PYTHON) -m pytest -q -p no:xdist -m alone \
	  tests/python

# A real Slurm on localhost (slurm-wlm and munge, installed when missing; root, else skipped):
# kbx slurm submit --shards 2 on the CPU gives the verdicts of one kbx eval (about a minute).
test-slurm: build-test
	$(TEST_ENV) bash tests/slurm/run_local_slurm.sh $(KBX)

check-suite: build-test
	$(TEST_ENV) $(KBX) suite check --device cpu

# The experts on the CPU; two reference workers, so that the GPU pipeline's chunks computed side by side
# (sched::JobFeed) run here too.
check-expert: build-test
	$(TEST_ENV) $(KBX) eval --method expert --candidates solutions/expert --device cpu --jobs $(JOBS) \
	  --reference-workers 2 --db $(BUILD)/ci-expert.db --fresh
	$(KBX) results --db $(BUILD)/ci-expert.db
	@! $(KBX) results --db $(BUILD)/ci-expert.db --format csv | tail -n +2 | grep -v ',passed,' \
	  || (echo "an expert kernel failed on the CPU" && false)

format:
	clang-format -i $$(git ls-files 'src/*.cpp' 'src/*.h' 'tests/cpp/*.cpp' 'tests/cpp/*.h' 'probe/*.cpp' 'probe/*.h')

check-format:
	clang-format --dry-run --Werror $$(git ls-files 'src/*.cpp' 'src/*.h' 'tests/cpp/*.cpp' 'tests/cpp/*.h' 'probe/*.cpp' 'probe/*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
