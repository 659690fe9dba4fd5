# Convenience front end over CMake. `make demo` and `make check` do all the
# set-up on a fresh Debian 12 machine (packages are installed when run as
# root).
BUILD ?= build
CHECK_BUILD ?= build-check
JOBS ?= 2

.PHONY: all deps build demo check clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

demo: build
	scripts/with-redis.sh $(BUILD)/examples/points_demo

# Every test, under ASan+UBSan with warnings as errors. The runner starts
# its own redis-server instances and ends with "N passed, N failed".
check: deps
	cmake -S . -B $(CHECK_BUILD) -DCMAKE_BUILD_TYPE=Debug \
	    -DREDISLOCK_WERROR=ON -DREDISLOCK_SANITIZE=address,undefined >/dev/null
	cmake --build $(CHECK_BUILD) -j$(JOBS)
	$(CHECK_BUILD)/tests/rl-tests

clean:
	rm -rf $(BUILD) $(CHECK_BUILD)
