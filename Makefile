# Convenience front end to CMake.  Everything real lives in CMakeLists.txt.
#
#   make [build]   configure (if needed) and build into $(BUILD_DIR)
#   make check     build, then run the test suite (the `slow` ones last)
#   make demo      build, then run the demo (Mandelbrot on 4 traced workers)
#   make bench     build, then run every benchmark (build/bench/bench_*)
#   make bench-quick  the same in under a minute: smaller traces, fewer
#                  calls, no callgrind, no scale benchmark (development)
#   make install   install into $(PREFIX) (DESTDIR honoured)
#   make asan      build and test under ASan+UBSan in $(ASAN_DIR), no `slow`
#   make fuzz      build with clang and run each fuzzer for FUZZ_SECONDS
#   make format    clang-format every .c/.h
#   make clean     remove the build directories
#
# CMAKE_FLAGS adds cmake options (giving it reconfigures).  With CI=true
# warnings are errors (-DDW_WERROR=ON) in $(BUILD_DIR) too.

BUILD_DIR    ?= build
ASAN_DIR     ?= build-asan
FUZZ_DIR     ?= build-fuzz
BUILD_TYPE   ?= RelWithDebInfo
PREFIX       ?= /usr/local
FUZZ_SECONDS ?= 30
CMAKE_FLAGS  ?=
CMAKE        ?= cmake
CTEST        ?= ctest
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)

CI_FLAGS := $(if $(filter true,$(CI)),-DDW_WERROR=ON)

# $(call configure,dir,flags): configure dir with flags and CMAKE_FLAGS
# when it has no cache yet, or again when CMAKE_FLAGS or CI asks for it.
configure = if [ ! -f $(1)/CMakeCache.txt ] || [ -n "$(strip $(CI_FLAGS) $(CMAKE_FLAGS))" ]; then \
	$(CMAKE) -S . -B $(1) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(2) $(CMAKE_FLAGS); fi

.PHONY: all build check demo bench bench-quick install asan fuzz format clean

all: build

build:
	@$(call configure,$(BUILD_DIR),$(CI_FLAGS))
	$(CMAKE) --build $(BUILD_DIR) -j $(JOBS)

# The `slow` tests (thousands of workers, 10,000 cycles) run after the
# others: those that want the whole machine one at a time (a
# RESOURCE_LOCK in tests/runtime), the cycles beside them.
check: build
	$(CTEST) --test-dir $(BUILD_DIR) --output-on-failure -j2 -LE slow
	$(CTEST) --test-dir $(BUILD_DIR) --output-on-failure -j2 -L slow

# The demo: examples/mandelbrot.c with 4 local workers, every process
# traced, the trace merged at the end, then drawn as an HTML timeline
# beside it.  It runs in the build directory so its image
# (mandelbrot.pgm) and trace (mandelbrot.trace/) land there.
demo: build
	cd $(BUILD_DIR) && rm -rf mandelbrot.trace && \
	./tools/dwork run --trace=mandelbrot.trace -p 4 ./examples/mandelbrot && \
	./tools/dwork view -q mandelbrot.trace/trace.prv && \
	echo "dwork: timeline in $$PWD/mandelbrot.trace/trace.html (open it in a browser)"

bench: build
	@set -e; for b in $(BUILD_DIR)/bench/bench_*; do \
		[ -f "$$b" ] && [ -x "$$b" ] || continue; \
		echo "== $$b"; DWORK_TOOL="$(abspath $(BUILD_DIR))/tools/dwork" "$$b"; \
	done

bench-quick: build
	@set -e; export BENCH_QUICK=1 BENCH_MERGE_RECORDS=1000000 \
		BENCH_VIEW_RECORDS=500000; \
	for b in $(BUILD_DIR)/bench/bench_*; do \
		[ -f "$$b" ] && [ -x "$$b" ] || continue; \
		case "$$b" in *bench_scale) continue;; esac; \
		echo "== $$b"; "$$b"; \
	done

install: build
	DESTDIR="$(DESTDIR)" $(CMAKE) --install $(BUILD_DIR) --prefix "$(PREFIX)"

asan:
	@$(call configure,$(ASAN_DIR),-DDW_SANITIZE=ON -DDW_WERROR=ON)
	$(CMAKE) --build $(ASAN_DIR) -j $(JOBS)
	UBSAN_OPTIONS=print_stacktrace=1 $(CTEST) --test-dir $(ASAN_DIR) --output-on-failure -j2 -LE slow

# Each fuzzer runs on a scratch copy of tests/fuzz/corpus/NAME so the
# corpus in the repository only changes on purpose.
fuzz:
	@if ! command -v clang >/dev/null; then echo "fuzz: clang not found, skipped"; exit 0; fi; \
	set -e; \
	$(call configure,$(FUZZ_DIR),-DCMAKE_C_COMPILER=clang -DDW_SANITIZE=ON -DDW_FUZZ=ON); \
	$(CMAKE) --build $(FUZZ_DIR) -j $(JOBS); \
	for f in $(FUZZ_DIR)/tests/fuzz/*_fuzz; do \
		[ -f "$$f" ] && [ -x "$$f" ] || continue; \
		name=$$(basename "$$f" _fuzz); \
		tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
		if [ -d tests/fuzz/corpus/$$name ]; then cp -R tests/fuzz/corpus/$$name/. "$$tmp"; fi; \
		echo "== $$name: $(FUZZ_SECONDS)s"; \
		"$$f" -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=$(FUZZ_DIR)/ "$$tmp"; \
		rm -rf "$$tmp"; \
	done

format:
	find include src tools examples bench tests -type f -name '*.[ch]' \
		-print0 | xargs -0 -r clang-format -i

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(FUZZ_DIR)
