#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

# LifecycleKit / lifecycled — build, run, test, install.
#
#   make run      build and run the demo daemon in this terminal (scripts/run does the same without make)
#   make test     every test: unit tests, then the end-to-end tests under a private systemd (sudo for that part)
#   make install  install lifecycled, its unit and its configuration (needs root)
#   make bench    the benchmark table and plot (docs/benchmarks.md)
#   make man      lifecyclectl's man page, docs/man/lifecyclectl.1 (generated, committed)
#   make example  build the example, Examples/HelloService (a Hummingbird server and a Vapor application, each a
#                 LifecycleKit daemon: hello-service and hello-vapor)
#   make image    the example as a container image, localhost/hello-service:latest (offline: no registry, no base image)
#   make sanitize the unit tests under AddressSanitizer (with LeakSanitizer) and ThreadSanitizer
#   make unit-test-netns  the unit tests where net.unix.max_dgram_qlen is 512, as on a machine systemd booted
#   make fuzz     every libFuzzer target of Fuzzing/ for FUZZ_SECONDS each (default 60); FUZZ_TARGETS=json picks some
#   make api      write docs/api/public-api.txt, the public API from the symbol graph (CI checks it is current)
#   make docs     build the DocC catalogs, warnings as errors (CI does too)

SWIFT      ?= swift
PYTHON     ?= /usr/bin/python3
PREFIX     ?= /usr/local
CONFIG     ?= debug
EXAMPLE    ?= Examples/HelloService

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# The build directory is .build in the checkout unless LIFECYCLED_SCRATCH_PATH names another (scripts/run and the
# end-to-end harness read it too; the example's is beside it, with -example). LIFECYCLED_BIN and HELLO_SERVICE_BIN
# hand e2e-test a daemon and an example built elsewhere; given both, it builds nothing (lifecyclectl and the tests'
# scene-service are taken from beside the daemon unless LIFECYCLECTL_BIN or SCENE_SERVICE_BIN names another, and the
# example's hello-vapor from beside hello-service unless HELLO_VAPOR_BIN does).
SCRATCH = $(if $(LIFECYCLED_SCRATCH_PATH),--scratch-path "$(LIFECYCLED_SCRATCH_PATH)")
EXAMPLE_SCRATCH = $(if $(LIFECYCLED_SCRATCH_PATH),--scratch-path "$(LIFECYCLED_SCRATCH_PATH)-example")

.PHONY: deps build test-services example example-test image run test unit-test unit-test-netns e2e-test sanitize sanitize-address sanitize-thread fuzz api api-check docs install uninstall bench man clean

# Installs what the build and the tests need from Debian (scripts/debian-packages), only when something is missing.
deps:
	@scripts/install-packages build test

build: deps
	$(SWIFT) build $(SCRATCH) -c $(CONFIG) --product lifecycled
	$(SWIFT) build $(SCRATCH) -c $(CONFIG) --product lifecyclectl

# The end-to-end tests' own services (Tests/SceneService: an application that uses scenes), built beside lifecycled,
# where the tests look for them (or SCENE_SERVICE_BIN names it).
test-services: deps
	$(SWIFT) build $(SCRATCH) -c $(CONFIG) --product scene-service

# Its own package, which depends on this one by path (and on Hummingbird, which this package never resolves).
# SwiftPM keeps the build plan of a path dependency while that package's manifest is unchanged: a source file added
# to LifecycleKit since the last build would be missing from it ("cannot find … in scope"). So the plan is dropped
# (made again in seconds; nothing is recompiled that need not be) when a directory of Sources/ is newer than it.
EXAMPLE_BUILD = $(if $(LIFECYCLED_SCRATCH_PATH),$(LIFECYCLED_SCRATCH_PATH)-example,$(EXAMPLE)/.build)
example: deps
	@plan="$(EXAMPLE_BUILD)/$$(uname -m)-unknown-linux-gnu/$(CONFIG)/description.json"; \
	if [ -f "$$plan" ] && [ -n "$$(find Sources -type d -newer "$$plan" -print -quit)" ]; then \
		echo "Sources/ gained or lost a file since the example's last build: planning it again"; \
		rm -f "$$plan" "$(EXAMPLE_BUILD)/$(CONFIG).yaml"; \
	fi
	$(SWIFT) build $(EXAMPLE_SCRATCH) -c $(CONFIG) --package-path "$(EXAMPLE)"

# The example and lifecyclectl of this CONFIG (debug: the Swift runtime goes in from the toolchain; for the smaller
# image of `make install`'s static release build, see Examples/HelloService/README.md) with the libraries they link, as
# a root file system, built into IMAGE by podman with Examples/HelloService/Containerfile (scripts/container-image).
IMAGE ?= localhost/hello-service:latest
image: build example
	scripts/container-image --tag "$(IMAGE)" \
		"$$($(SWIFT) build $(EXAMPLE_SCRATCH) -c $(CONFIG) --package-path "$(EXAMPLE)" --show-bin-path)/hello-service" \
		"$$($(SWIFT) build $(SCRATCH) -c $(CONFIG) --show-bin-path)/lifecyclectl"

# scripts/run execs the daemon so job control reaches it directly; this target is the same for make users.
run: deps
	scripts/run $(ARGS)

unit-test: deps
	$(SWIFT) test $(SCRATCH)

# The example's own tests: its delegate under LifecycleKit's test kit (a restart policy on a manual clock, a refused
# reload), and both adapters' servers on loopback sockets. The same build plan as `make example` (see there).
example-test: example
	$(SWIFT) test $(EXAMPLE_SCRATCH) --package-path "$(EXAMPLE)"

# No unit test may depend on a host setting; this runs them where one that differs between machines is the other way:
# net.unix.max_dgram_qlen (how many datagrams an unread AF_UNIX socket holds) is the kernel's 10 on these build
# machines and 512 on any machine systemd booted (systemd raises it, in its own network namespace). The tests run in
# a network namespace of their own (unshare, as root: the setting is the namespace's, the host's is untouched) with
# it at 512, as the invoking user again. The listener tests connect on loopback, which a new namespace has down: ip
# (iproute2) brings it up first. No unit test uses any other network.
UID_GID = $(shell id -u):$(shell id -g)
unit-test-netns: deps
	$(SWIFT) build $(SCRATCH) --build-tests
	$(SUDO) unshare --net -- sh -c 'ip link set lo up && sysctl -qw net.unix.max_dgram_qlen=512 && \
		test "$$(cat /proc/sys/net/unix/max_dgram_qlen)" = 512 && \
		exec setpriv --reuid=$(firstword $(subst :, ,$(UID_GID))) --regid=$(lastword $(subst :, ,$(UID_GID))) --init-groups \
		env "PATH=$(PATH)" "HOME=$(HOME)" $(SWIFT) test $(SCRATCH) --skip-build'

# The end-to-end tests boot a private systemd, which needs root: only this step runs under sudo (when not root),
# so the build directory stays the user's.
# E2E_ARGS goes to pytest as it is: E2E_ARGS='-m "not load"' leaves out the load tests (pytest.ini's markers),
# E2E_ARGS='-k logind' runs one part.
e2e-test: $(if $(LIFECYCLED_BIN),deps,build test-services) $(if $(HELLO_SERVICE_BIN),,example)
	bin="$${LIFECYCLED_BIN:-$$($(SWIFT) build $(SCRATCH) -c $(CONFIG) --show-bin-path)/lifecycled}"; \
	ctl="$${LIFECYCLECTL_BIN:-$$(dirname "$$bin")/lifecyclectl}"; \
	scene="$${SCENE_SERVICE_BIN:-$$(dirname "$$bin")/scene-service}"; \
	hello="$${HELLO_SERVICE_BIN:-$$($(SWIFT) build $(EXAMPLE_SCRATCH) -c $(CONFIG) --package-path "$(EXAMPLE)" --show-bin-path)/hello-service}"; \
	vapor="$${HELLO_VAPOR_BIN:-$$(dirname "$$hello")/hello-vapor}"; \
	$(SUDO) env PYTHONDONTWRITEBYTECODE=1 "LIFECYCLED_BIN=$$bin" "LIFECYCLECTL_BIN=$$ctl" "HELLO_SERVICE_BIN=$$hello" \
		"SCENE_SERVICE_BIN=$$scene" "HELLO_VAPOR_BIN=$$vapor" $(PYTHON) -m pytest Tests/EndToEnd -v --durations=15 $(E2E_ARGS)

test: unit-test example-test e2e-test

# The unit tests under the sanitizers, each in a build directory of its own. swift-testing only (--disable-xctest):
# XCTest's runner, which finds no XCTest here, leaks a few objects of its own that LeakSanitizer would report.
# A report fails the run: ASan and LSan exit non-zero, TSan exits 66.
sanitize: sanitize-address sanitize-thread

sanitize-address: deps
	ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 $(SWIFT) test --disable-xctest --sanitize=address --scratch-path .build-asan

sanitize-thread: deps
	TSAN_OPTIONS=halt_on_error=1 $(SWIFT) test --disable-xctest --sanitize=thread --scratch-path .build-tsan

# The fuzz targets (docs/testing.md, "Fuzzing"), built with -sanitize=fuzzer,address in .build-fuzz, each run for
# FUZZ_SECONDS; a crash or a failed check is kept in .build-fuzz/findings/TARGET and fails the run once all have run.
# scripts/fuzz reads FUZZ_SECONDS, FUZZ_TIMEOUT, FUZZ_MAX_LEN, FUZZ_ARGS ... from the environment or this command line.
# CI runs `scripts/fuzz --ci` (the checks' unit tests, then every target over its seeds and 10 s beyond); this is for
# fuzzing longer, on a working corpus that grows from run to run.
fuzz: deps
	SWIFT="$(SWIFT)" scripts/fuzz $(FUZZ_TARGETS)

# The public API (scripts/api-baseline): `make api` writes the baseline after a deliberate change to the surface;
# `make api-check` fails when the sources' public API differs from it or a public declaration has no documentation.
api: deps
	SWIFT="$(SWIFT)" scripts/api-baseline

api-check: deps
	SWIFT="$(SWIFT)" scripts/api-baseline --check

# The DocC catalogs of the libraries with public API, with the toolchain's docc, warnings as errors (scripts/docs).
docs: deps
	scripts/docs

# The installed binary links the Swift runtime and libstdc++ statically: it runs without a toolchain on the machine,
# starts faster and maps fewer pages (scripts/build-release says how, docs/benchmarks.md how much).
RELEASE_BUILD = SWIFT="$(SWIFT)" scripts/build-release .build-release-static
install:
	$(RELEASE_BUILD) --product lifecycled
	$(RELEASE_BUILD) --product lifecyclectl
	$(SUDO) install -D -m 0755 "$$($(RELEASE_BUILD) --show-bin-path)/lifecycled" $(DESTDIR)$(PREFIX)/bin/lifecycled
	bin="$$($(RELEASE_BUILD) --show-bin-path)"; \
	$(SUDO) install -D -m 0755 "$$bin/lifecyclectl" $(DESTDIR)$(PREFIX)/bin/lifecyclectl; \
	$(SUDO) install -D -m 0644 docs/man/lifecyclectl.1 $(DESTDIR)$(PREFIX)/share/man/man1/lifecyclectl.1; \
	"$$bin/lifecyclectl" --generate-completion-script bash | $(SUDO) install -D -m 0644 /dev/stdin $(DESTDIR)$(PREFIX)/share/bash-completion/completions/lifecyclectl; \
	"$$bin/lifecyclectl" --generate-completion-script zsh | $(SUDO) install -D -m 0644 /dev/stdin $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_lifecyclectl; \
	"$$bin/lifecyclectl" --generate-completion-script fish | $(SUDO) install -D -m 0644 /dev/stdin $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/lifecyclectl.fish
	$(SUDO) install -D -m 0644 systemd/lifecycled.sysusers $(DESTDIR)/usr/lib/sysusers.d/lifecycled.conf
	[ -n "$(DESTDIR)" ] || $(SUDO) systemd-sysusers /usr/lib/sysusers.d/lifecycled.conf
	$(SUDO) install -D -m 0644 systemd/lifecycled.service $(DESTDIR)/etc/systemd/system/lifecycled.service
	[ -e $(DESTDIR)/etc/lifecycled.conf ] || $(SUDO) install -D -m 0644 systemd/lifecycled.conf $(DESTDIR)/etc/lifecycled.conf
	[ -n "$(DESTDIR)" ] || $(SUDO) systemctl daemon-reload

uninstall:
	-$(SUDO) systemctl disable --now lifecycled
	$(SUDO) rm -f $(DESTDIR)$(PREFIX)/bin/lifecycled $(DESTDIR)/etc/systemd/system/lifecycled.service $(DESTDIR)/usr/lib/sysusers.d/lifecycled.conf
	$(SUDO) rm -f $(DESTDIR)$(PREFIX)/bin/lifecyclectl $(DESTDIR)$(PREFIX)/share/man/man1/lifecyclectl.1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/lifecyclectl $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_lifecyclectl \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/lifecyclectl.fish
	[ -n "$(DESTDIR)" ] || $(SUDO) systemctl daemon-reload

bench: deps
	scripts/bench

# swift-argument-parser's GenerateManual plugin writes the page under the build folder; it is committed so users have it
# without building. Dated by the last change to lifecyclectl's sources, so regenerating an unchanged CLI changes nothing.
man: deps
	$(SWIFT) package $(SCRATCH) generate-manual --configuration $(CONFIG) --date "$$(git log -1 --format=%cs -- Sources/lifecyclectl)"
	install -D -m 0644 "$(or $(LIFECYCLED_SCRATCH_PATH),.build)/plugins/GenerateManual/outputs/lifecyclectl/lifecyclectl.1" docs/man/lifecyclectl.1

clean:
	rm -rf .build .build-* "$(EXAMPLE)/.build"
