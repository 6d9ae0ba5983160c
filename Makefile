# Beacon: `make run` starts the daemon on its defaults, `make test` builds and passes every test.
# Both install what is missing on a fresh Debian 12 machine first.

SWIFT ?= swift
SWIFT_BUILD_FLAGS ?=
APT_PACKAGES := pkg-config libsystemd-dev libsqlite3-dev sqlite3 dbus-daemon python3 python3-venv \
	python3-dbusmock systemd
VENV := .venv

.PHONY: all deps apt-deps venv build run test test-only format lint clean install-user

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
	BEACON_TEST_PYTHON=$(CURDIR)/$(VENV)/bin/python3 $(SWIFT) test --skip-build $(SWIFT_BUILD_FLAGS)

format:
	$(SWIFT) format --in-place --recursive --configuration .swift-format Sources Tests Package.swift

lint:
	$(SWIFT) format lint --strict --recursive --configuration .swift-format Sources Tests Package.swift

clean:
	rm -rf .build $(VENV)
