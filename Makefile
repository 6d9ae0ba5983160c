# Beacon: `make run` starts the daemon on its defaults, `make test` builds and passes every test.
# Both install what is missing on a fresh Debian 12 machine first.

# swift build is retried once when swift-build itself crashes (scripts/swift.sh says why).
SWIFT ?= $(CURDIR)/scripts/swift.sh
SWIFT_BUILD_FLAGS ?=
APT_PACKAGES := pkg-config libsystemd-dev libsqlite3-dev sqlite3 dbus-daemon python3 python3-venv \
	python3-dbusmock systemd etcd-server etcd-client openssl iproute2 nftables
VENV := .venv

.PHONY: all deps apt-deps venv build run test test-fleet test-fleet-long fleet-demo format lint clean install-user install-fleet bench-signals bench-bus manual deb \
	test-deb fuzz test-sanitizers

all: build

deps: apt-deps venv

apt-deps:
	@missing=""; for p in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# Python packages the interoperability tests use live in a virtual environment, not the system.
venv: $(VENV)/.ready
$(VENV)/.ready: tests-requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q -r tests-requirements.txt
	touch $@

build: apt-deps
	$(SWIFT) build $(SWIFT_BUILD_FLAGS)

run: build
	$(SWIFT) run $(SWIFT_BUILD_FLAGS) beacond

test: deps
	$(SWIFT) build --build-tests $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build --package-path Examples/FromTheMac $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build --package-path Examples/VarlinkCertification $(SWIFT_BUILD_FLAGS)
	BEACON_TEST_PYTHON=$(CURDIR)/$(VENV)/bin/python3 \
		FROM_THE_MAC_PATH=$$($(SWIFT) build --package-path Examples/FromTheMac $(SWIFT_BUILD_FLAGS) --show-bin-path)/FromTheMac \
		VARLINK_CERTIFICATION_PATH=$$($(SWIFT) build --package-path Examples/VarlinkCertification $(SWIFT_BUILD_FLAGS) --show-bin-path)/varlink-certification \
		$(SWIFT) test --skip-build $(SWIFT_BUILD_FLAGS)
	for target in $(FUZZ_TARGETS); do \
		BEACON_FUZZ_TARGET=$$target $$($(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path)/beacon-fuzz \
			Tests/Fuzz/Corpus/$$target || exit 1; \
	done
	$(SWIFT) build --package-path Examples/SettingsMirror $(SWIFT_BUILD_FLAGS)
	$(MAKE) test-fleet
	$(MAKE) test-deb

# beacon-fleet (its own package under Fleet/, so that beacond's build does not build gRPC) against a real
# three-member etcd cluster, with the beacond and beaconctl built above.
test-fleet:
	$(SWIFT) build --package-path Fleet --build-tests $(SWIFT_BUILD_FLAGS)
	BEACOND_PATH=$$($(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path)/beacond \
		BEACONCTL_PATH=$$($(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path)/beaconctl \
		$(SWIFT) test --package-path Fleet --skip-build $(SWIFT_BUILD_FLAGS)

# The fault run of Fleet/Tests (FleetFaultTests) for ten minutes, and ten minutes of sustained writes without faults;
# the recorded histories and their reports go to FLEET_HISTORY_OUT.
FLEET_LONG_SECONDS ?= 600
FLEET_HISTORY_OUT ?= $(CURDIR)/.build/fleet-history
test-fleet-long:
	$(SWIFT) build $(SWIFT_BUILD_FLAGS)
	$(SWIFT) build --package-path Fleet --build-tests $(SWIFT_BUILD_FLAGS)
	mkdir -p $(FLEET_HISTORY_OUT)/faults $(FLEET_HISTORY_OUT)/sustained
	BEACOND_PATH=$$($(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path)/beacond \
		BEACON_FLEET_FAULT_SECONDS=$(FLEET_LONG_SECONDS) BEACON_FLEET_HISTORY_OUT=$(FLEET_HISTORY_OUT)/faults \
		$(SWIFT) test --package-path Fleet --skip-build $(SWIFT_BUILD_FLAGS) --filter 'FleetFaultTests/faults'
	BEACOND_PATH=$$($(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path)/beacond \
		BEACON_FLEET_SUSTAINED_SECONDS=$(FLEET_LONG_SECONDS) BEACON_FLEET_HISTORY_OUT=$(FLEET_HISTORY_OUT)/sustained \
		$(SWIFT) test --package-path Fleet --skip-build $(SWIFT_BUILD_FLAGS) --filter 'FleetFaultTests/sustained'

# Two machines sharing fleet.** through a three-member etcd on 127.0.0.1 (the README's recipe); stops what it started.
fleet-demo: apt-deps
	SWIFT=$(SWIFT) scripts/fleet-demo.sh

# The parsers that clients and files reach, each under libFuzzer and AddressSanitizer for FUZZ_SECONDS
# (scripts/fuzz.sh; `make test` replays their checked-in corpus without libFuzzer).
FUZZ_TARGETS := json call-view framing idl configuration settings schema-text
FUZZ_SECONDS ?= 60
fuzz:
	scripts/fuzz.sh -t $(FUZZ_SECONDS)

# The whole suite under AddressSanitizer and under ThreadSanitizer (scripts/test-sanitizers.sh).
test-sanitizers: deps
	BEACON_TEST_PYTHON=$(CURDIR)/$(VENV)/bin/python3 scripts/test-sanitizers.sh

FORMATTED := Sources Tests Fuzz Package.swift Fleet/Sources/BeaconFleet Fleet/Sources/beacon-fleet Fleet/Sources/fleet-bench \
	Fleet/Sources/FleetHistory Fleet/Sources/fleet-history-check \
	Fleet/Tests \
	Fleet/Package.swift

format:
	$(SWIFT) format --in-place --recursive --configuration .swift-format $(FORMATTED)

lint:
	$(SWIFT) format lint --strict --recursive --configuration .swift-format $(FORMATTED)

# Signals against OpenCombine and a closure call, release build; prints one table with the goal ratios.
bench-signals:
	Benchmarks/run.sh

# beacond beside dbus-daemon, dbus-broker and Redis (our peer clients in Benchmarks/Peers) in one run; needs root.
bench-bus:
	REPS=3 scripts/bus-bench.sh

# Man pages for beaconctl, generated from its command definitions.
manual:
	$(SWIFT) package --allow-writing-to-package-directory generate-manual --multi-page
	@echo "man pages in .build/plugins/GenerateManual/outputs/beaconctl/"

clean:
	rm -rf .build $(VENV)

# Installs beacond and beaconctl into ~/.local/bin and the user units into ~/.config/systemd/user, so that
# `systemctl --user enable --now beacon.socket` starts the bus on first use.
BINDIR := $(HOME)/.local/bin
UNITDIR := $(or $(XDG_CONFIG_HOME),$(HOME)/.config)/systemd/user

install-user: apt-deps
	bin=$$(SWIFT=$(SWIFT) scripts/build-release.sh --static-swift-stdlib beacond beaconctl) && \
		install -d -m 0755 $(BINDIR) $(UNITDIR) && install -m 0755 "$$bin/beacond" "$$bin/beaconctl" $(BINDIR)/
	install -m 0644 systemd/beacon.service systemd/beacon.socket $(UNITDIR)/
	install -d -m 0700 $(HOME)/.local/state/beacon
	install -d -m 0755 $(HOME)/.local/share/beacon
	install -m 0644 config/bridge.json $(HOME)/.local/share/beacon/bridge.json
	if command -v systemctl >/dev/null 2>&1 && systemctl --user show-environment >/dev/null 2>&1; then \
		systemctl --user daemon-reload; systemctl --user try-restart beacon.service; fi
	@echo "Enable with: systemctl --user enable --now beacon.socket"

# beacon-fleet (Fleet/README.md), release build, to ~/.local/bin, with its user unit.
install-fleet:
	$(SWIFT) build --package-path Fleet -c release --product beacon-fleet
	install -d -m 0755 $(BINDIR) $(UNITDIR)
	install -m 0755 "$$($(SWIFT) build --package-path Fleet -c release --show-bin-path)/beacon-fleet" $(BINDIR)/
	install -m 0644 systemd/beacon-fleet.service $(UNITDIR)/
	@echo "Name the subtrees in fleet.prefixes and the etcd endpoints in fleet.endpoints (config/README.md), then:"
	@echo "  systemctl --user enable --now beacon-fleet.service"

# The Debian packages build-deb/beacon_VERSION_ARCH.deb (debian/, debhelper): the binaries of install-user, the user
# units with beacon.socket enabled for every user, man pages, completions; and build-deb/beacon-fleet_VERSION_ARCH.deb:
# beacon-fleet (release build of Fleet/), its user unit (not enabled) and man page. VERSION is BeaconVersion.current.
deb: apt-deps
	SWIFT=$(SWIFT) scripts/deb.sh

# Builds both packages, runs lintian, installs them, runs the installed daemon socket-activated and the installed
# beacon-fleet against it and a three-member etcd, purges them (root or sudo).
test-deb: apt-deps
	SWIFT=$(SWIFT) scripts/test-deb.sh
