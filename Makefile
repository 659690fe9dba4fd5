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
	rm -rf $(BUILD) build-check build-tsan

# The lock benchmark (bench/, not part of check): one run of about two
# minutes on a private redis-server, against redis-py and node-redlock.
# BENCH_ARGS go to lockbench (--ks, --peer-ks, --scale, --no-peers).
.PHONY: bench
bench: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j$(JOBS) --target redislock_static
	BUILD=$(BUILD) bench/run.sh $(BENCH_ARGS)
