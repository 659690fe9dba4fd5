# Convenience front end over CMake. `make demo` and `make check` do all the
# set-up on a fresh Debian 12 machine (packages are installed when run as
# root).
BUILD ?= build
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

# Every test under ASan+UBSan, the threaded ones again under TSan, all
# with warnings as errors. The runner starts its own redis-server
# instances; the last line is "N passed, N failed".
check: deps
	JOBS=$(JOBS) scripts/check.sh

clean:
	rm -rf $(BUILD) build-check build-tsan
