# Two entry points: `make run` and `make test`. Both first make sure the sandbox mechanisms
# (bubblewrap, slirp4netns) are installed, through apt-get, as root or through sudo.
# `make test` run as root also runs the live execution suite as an unprivileged user
# (scripts/test-unprivileged creates `spear-test` when missing).

CARGO ?= cargo
SYSTEM_PACKAGES := bubblewrap slirp4netns tmux poppler-utils
export CARGO_TERM_COLOR ?= never

.PHONY: run test deps build

run: deps
	$(CARGO) build --release
	./target/release/spear --workspace "$(CURDIR)" $(if $(MODE),--mode $(MODE))

test: deps
	$(CARGO) test --all-targets --features test-hooks --no-fail-fast
	CARGO="$(CARGO)" scripts/test-unprivileged

build:
	$(CARGO) build --release

deps:
	@scripts/ensure-system-deps $(SYSTEM_PACKAGES)
