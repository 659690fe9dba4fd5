# Convenience front end over CMake. `make demo` and `make check` do all the
# set-up on a fresh Debian 12 machine (packages are installed when run as
# root).
BUILD ?= build
JOBS ?= 2

.PHONY: all deps build demo check clean install

all: build

deps:
	@scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

demo: build
	scripts/with-redis.sh $(BUILD)/examples/points_demo

# Every test under ASan+UBSan, the threaded ones again under TSan, all
# with warnings as errors. The runner starts its own redis-server
# instances; the last line is "N passed, N failed".
check: deps
	JOBS=$(JOBS) scripts/check.sh

# The tests of `make check` 20 times in a row beside a second copy of them
# (scripts/flake-hunt.sh -n RUNS -l suite|twin|cpu|none -c COPIES;
# HUNT_ARGS passes options, e.g. HUNT_ARGS="-l twin" to count the copy's
# runs too, "-l twin -c 2" for three suites at once, all counted): each
# failure with its run and failing line, then "N runs, K failing runs";
# non-zero on any. Build dirs as check.sh (CHECK_BUILD, TSAN_BUILD); the
# logs' dir printed.
.PHONY: flake-hunt
flake-hunt: deps
	JOBS=$(JOBS) scripts/flake-hunt.sh $(HUNT_ARGS)

# The ABI of libredislock.so against the 0.1.0 baseline in tests/abi, with
# abigail-tools' abidiff: fails on any change a program built against an
# older header could notice (scripts/check-abi.sh says which).
.PHONY: check-abi
check-abi: deps
	JOBS=$(JOBS) scripts/check-abi.sh

# The libFuzzer targets in fuzz/ (clang, ASan, UBSan): a million
# executions each, then one line per target with its executions and
# crashes. `scripts/fuzz.sh --smoke` is the 10-second run CI does.
.PHONY: fuzz check-valgrind
fuzz: deps
	scripts/fuzz.sh --runs 1000000

# The tests that do not hinge on timing, under valgrind's memcheck, from a
# build without sanitizers (-O1 -g); scripts/check-valgrind.sh lists them.
check-valgrind: deps
	JOBS=$(JOBS) scripts/check-valgrind.sh

# make install [PREFIX=/usr/local] [DESTDIR=/staging]: builds as `make build`
# does, then installs the header, the libraries, redislock.pc, the CMake
# package, the CLI and the man pages under $(DESTDIR)$(PREFIX). The prefix
# is given at configure time, where it also picks the library directory
# (lib/<multiarch> on Debian when PREFIX=/usr).
PREFIX ?= /usr/local
install: build
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX="$(PREFIX)" >/dev/null
	cmake --build $(BUILD) -j$(JOBS)
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) build-check build-tsan build-fuzz build-valgrind \
	    build-abi

# The lock benchmark (bench/, not part of check): one run of about two
# minutes on a private redis-server, against redis-py and node-redlock,
# after the Redlock run of bench-redlock. BENCH_ARGS go to lockbench
# (--ks, --peer-ks, --scale, --no-peers).
.PHONY: bench
bench: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j$(JOBS) --target redislock_static
	BUILD=$(BUILD) bench/run.sh $(BENCH_ARGS)

# The library of AB_BASE against the working tree's, in one run, in turns
# (bench/ab.sh): the uncontended cycle and the K=8 hand-off p50, blocking
# and on an event loop, with their ratios.
AB_BASE ?= 6e83b78
AB_ROUNDS ?= 7
.PHONY: bench-ab
bench-ab: deps
	bench/ab.sh $(AB_BASE) $(AB_ROUNDS)

# The server's instructions per uncontended cycle of each kind, counted by
# callgrind (bench/instr.sh): figures that do not move with the load.
.PHONY: bench-instr
bench-instr: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j$(JOBS) --target redislock_static
	BUILD=$(BUILD) bench/instr.sh

# Redlock over 3 and 5 servers against one server, in the same run, and
# with two and three of five blackholed (make bench runs it too).
.PHONY: bench-redlock
bench-redlock: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j$(JOBS) --target redislock_static
	BUILD=$(BUILD) bench/redlock.sh

# The failover table of docs/SAFETY.md: ROUNDS rounds (default 20) of
# each Sentinel and Cluster failover, with one and two replicas, without and with the
# replica-sync guard, from a release build. Prints a line per round and a
# total per row; not part of make check (a round takes about 10 s).
ROUNDS ?= 20
FAILOVER_BUILD ?= build-failover
.PHONY: failover-table
failover-table: deps
	@cmake -S . -B $(FAILOVER_BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(FAILOVER_BUILD) -j$(JOBS) --target rl-failover >/dev/null
	@ROUNDS=$(ROUNDS) BUILD=$(FAILOVER_BUILD) tests/failover/table.sh

# The exclusion checker's long run (tests/excl, docs/SAFETY.md): every lock
# mode in turn under its nemesis, SOAK_MINUTES in all (default 10), from an
# ASan+UBSan build. SOAK_SEED=<n> replays a run's random choices. Prints
# the seed first, then per mode the sections, faults injected per kind,
# overlaps and stale writes accepted, and one summary line; exits non-zero
# on any violation.
SOAK_MINUTES ?= 10
SOAK_SEED ?=
.PHONY: soak
soak: deps
	@cmake -S . -B build-soak -DCMAKE_BUILD_TYPE=Debug -DREDISLOCK_WERROR=ON \
	    -DREDISLOCK_SANITIZE=address,undefined >/dev/null
	@cmake --build build-soak -j$(JOBS) --target rl-soak >/dev/null
	@build-soak/tests/rl-soak --minutes $(SOAK_MINUTES) \
	    $(if $(SOAK_SEED),--seed $(SOAK_SEED))
