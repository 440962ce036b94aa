# libslub: the two commands of the README, and a few more.
#   make test    build and run every test: plain (rseq and fallback mode),
#                AddressSanitizer+UBSan, and ThreadSanitizer builds
#   make bench   build and run the benchmark suite (the main job); BENCH_ARGS
#                go to bench_suite; results/ gets the tables, plots and data
#   make bench-detail  the single benchmarks behind it (bench_page_alloc,
#                bench_slab, bench_rr, bench_malloc)
#   make install install headers, libraries, pkg-config and CMake files
#                (PREFIX=/usr/local)
#   make fuzz    the libFuzzer run (clang), FUZZ_TIME seconds
#   make fuzz-malloc  the drop-in's libFuzzer run (clang), FUZZ_TIME seconds
#   make stress  the reliability stress run, STRESS_TIME seconds a mode
#                (docs/reliability.md)

JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX ?= /usr/local
CMAKE  ?= cmake
CTEST  ?= ctest
BENCH_ARGS ?=
PAGE_BENCH_ARGS ?=
SLAB_BENCH_ARGS ?=
RR_BENCH_ARGS ?=
MALLOC_BENCH_ARGS ?=
BURST_BENCH_ARGS ?=
FUZZ_TIME ?= 60
FUZZ_ARGS ?=
STRESS_TIME ?= 300

CONFIGURE = $(CMAKE) -S . -DSLUB_WERROR=ON

.PHONY: all build test test-plain test-asan test-tsan test-clang bench bench-detail install deps clean \
	fuzz fuzz-malloc stress

all: build

deps:
	@sh scripts/deps.sh test

build: deps
	$(CONFIGURE) -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	$(CMAKE) --build build -j $(JOBS)

test-plain: build
	cd build && $(CTEST) --output-on-failure -j $(JOBS)

test-asan: deps
	$(CONFIGURE) -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSLUB_SANITIZE=address \
		-DSLUB_RACE_WINDOWS=ON >/dev/null
	$(CMAKE) --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		$(CTEST) --output-on-failure -j $(JOBS)

# ThreadSanitizer cannot see restartable sequences: this build runs the
# fallback mode (every per-CPU operation under the per-CPU lock).
test-tsan: deps
	$(CONFIGURE) -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DSLUB_SANITIZE=thread \
		-DSLUB_RACE_WINDOWS=ON >/dev/null
	$(CMAKE) --build build-tsan -j $(JOBS)
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1 \
		$(CTEST) --output-on-failure -j $(JOBS)

# The library built by clang, and the tests that run its restartable
# sequences and the drop-in (clang printed their inline asm's %fs operands
# without the segment, and every malloc faulted). Skipped without clang.
CLANG_TESTS = test_percpu test_sheaves test_sheaves_free test_slab_api test_slab_stress \
	test_malloc_api test_malloc_stale test_malloc_traffic test_malloc_fork test_malloc_cxx \
	fuzz_slub_replay fuzz_malloc_replay
test-clang: deps
	@if command -v clang >/dev/null 2>&1; then \
		CC=clang CXX=clang++ $(CONFIGURE) -B build-clang \
			-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUB_BENCH=OFF >/dev/null && \
		$(CMAKE) --build build-clang -j $(JOBS) --target $(CLANG_TESTS) && \
		cd build-clang && $(CTEST) --output-on-failure -j $(JOBS) \
			-R '^(test_percpu|test_sheaves|test_sheaves_free|test_slab_api|test_slab_stress|test_malloc_api|test_malloc_stale|test_malloc_traffic|test_malloc_fork|test_malloc_cxx|fuzz_replay|fuzz_malloc_replay)\.'; \
	else \
		echo "make test: no clang, the clang build skipped"; \
	fi

test: test-plain test-asan test-tsan test-clang
	@echo "make test: plain, ASan+UBSan, TSan and clang builds all passed"

# make bench: the benchmark suite (bench_suite): the seeds' workloads under
# every preset and against glibc, jemalloc, tcmalloc, mimalloc and
# libslub-malloc, in about five minutes on 2 CPUs. BENCH_ARGS selects, e.g.
#   make bench BENCH_ARGS="-w rr,stream -p 2009,default -a glibc -r 5 -d 0.5"
# (bench_suite -h lists the options). deps.sh bench installs the peers and
# python3-matplotlib from Debian when run as root.
bench:
	@sh scripts/deps.sh bench
	$(CMAKE) -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DSLUB_TESTS=OFF >/dev/null
	$(CMAKE) --build build-release -j $(JOBS)
	./build-release/bench/bench_suite -o results $(BENCH_ARGS)

# The detailed benchmarks behind the suite: PAGE_BENCH_ARGS go to
# bench_page_alloc, SLAB_BENCH_ARGS to bench_slab (-F adds the libslub
# columns in fallback mode), RR_BENCH_ARGS to bench_rr, MALLOC_BENCH_ARGS
# to bench_malloc, BURST_BENCH_ARGS to bench_burst, PROGRAMS_BENCH_ARGS to
# bench/bench_programs.py (real programs: python3, perl, sqlite3, gcc, git,
# xz, sort under each allocator).
bench-detail:
	@sh scripts/deps.sh bench
	$(CMAKE) -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DSLUB_TESTS=OFF >/dev/null
	$(CMAKE) --build build-release -j $(JOBS)
	mkdir -p results
	./build-release/bench/bench_page_alloc -o results/page_alloc.json $(PAGE_BENCH_ARGS)
	./build-release/bench/bench_slab -F -o results/slab.json $(SLAB_BENCH_ARGS)
	./build-release/bench/bench_rr -o results/rr.json $(RR_BENCH_ARGS)
	./build-release/bench/bench_malloc -L build-release/libslub-malloc.so \
		-o results/malloc.json $(MALLOC_BENCH_ARGS)
	./build-release/bench/bench_malloc -L build-release/libslub-malloc.so \
		-W single,prodcons,oversub -s 16-65536 \
		-o results/malloc_medium.json $(MALLOC_BENCH_ARGS)
	./build-release/bench/bench_malloc -L build-release/libslub-malloc.so \
		-W single,prodcons,oversub -s 65537-1048576 -w 1000 -T -d 0.5 \
		-o results/malloc_large.json $(MALLOC_BENCH_ARGS)
	./build-release/bench/bench_burst -L build-release/libslub-malloc.so \
		-o results/burst.json $(BURST_BENCH_ARGS)
	/usr/bin/python3 bench/bench_programs.py -L build-release/libslub-malloc.so \
		-o results/programs.json $(PROGRAMS_BENCH_ARGS)
	@echo "results: results/page_alloc.json results/slab.json results/rr.json" \
	      "results/malloc.json results/malloc_medium.json" \
	      "results/malloc_large.json results/burst.json results/programs.json"

install: build
	$(CMAKE) --install build --prefix $(PREFIX)

# The fuzz target under libFuzzer, from the committed corpus; what it finds
# new goes to results/fuzz-corpus (docs/reliability.md says how to merge it
# into fuzz/corpus). `make test` runs the same target on the corpus and on
# random inputs through a main() of its own, built with gcc.
fuzz:
	@sh scripts/deps.sh fuzz
	CC=clang $(CMAKE) -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DSLUB_FUZZ=ON -DSLUB_TESTS=OFF -DSLUB_BENCH=OFF >/dev/null
	$(CMAKE) --build build-fuzz -j $(JOBS) --target fuzz_slub
	mkdir -p results/fuzz-corpus
	./build-fuzz/fuzz/fuzz_slub -max_total_time=$(FUZZ_TIME) -max_len=512 \
		-print_final_stats=1 $(FUZZ_ARGS) results/fuzz-corpus fuzz/corpus

# The drop-in's target (fuzz/fuzz_malloc.c) the same way, without ASan:
# new inputs go to results/fuzz-malloc-corpus.
fuzz-malloc:
	@sh scripts/deps.sh fuzz
	CC=clang $(CMAKE) -S . -B build-fuzz-malloc -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DSLUB_FUZZ_MALLOC=ON -DSLUB_TESTS=OFF -DSLUB_BENCH=OFF >/dev/null
	$(CMAKE) --build build-fuzz-malloc -j $(JOBS) --target fuzz_malloc
	mkdir -p results/fuzz-malloc-corpus
	./build-fuzz-malloc/fuzz/fuzz_malloc -max_total_time=$(FUZZ_TIME) -max_len=1024 \
		-print_final_stats=1 $(FUZZ_ARGS) results/fuzz-malloc-corpus fuzz/corpus-malloc

# test_reliability for STRESS_TIME seconds on rseq, then in fallback mode.
stress: build
	SLUB_STRESS_SECONDS=$(STRESS_TIME) ./build/tests/test_reliability
	SLUB_STRESS_SECONDS=$(STRESS_TIME) SLUB_RSEQ=0 ./build/tests/test_reliability

clean:
	rm -rf build build-asan build-tsan build-clang build-release build-fuzz build-fuzz-malloc
