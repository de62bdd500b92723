# Two entry points: `make run` and `make test`. Both first make sure the system packages
# (bubblewrap, slirp4netns, tmux, poppler-utils, strace) are installed, through apt-get, as root or sudo.
# `make test` run as root also runs the live execution suite as an unprivileged user
# (scripts/test-unprivileged creates `spear-test` when missing), then prints which host
# features the live tests exercised (scripts/test-summary); the suite's exit status is kept.

CARGO ?= cargo
FEATURES_FILE := $(CURDIR)/target/test-features.txt
SYSTEM_PACKAGES := bubblewrap slirp4netns tmux poppler-utils strace
export CARGO_TERM_COLOR ?= never

.PHONY: run test deps build

run: deps
	$(CARGO) build --release
	./target/release/spear --workspace "$(CURDIR)" $(if $(MODE),--mode $(MODE))

# One shell, so that the summary runs whatever the suite did and the first failure's status
# is what `make` returns. The unprivileged run follows only a passing suite, as before.
test: deps
	@mkdir -p "$(dir $(FEATURES_FILE))" && : > "$(FEATURES_FILE)"
	@status=0; export SPEAR_TEST_FEATURES_FILE="$(FEATURES_FILE)"; \
	echo "$(CARGO) test --all-targets --features test-hooks --no-fail-fast"; \
	$(CARGO) test --all-targets --features test-hooks --no-fail-fast || status=$$?; \
	main="suite: $$( [ $$status -eq 0 ] && echo passed || echo "FAILED (exit $$status)" )"; \
	if [ $$status -eq 0 ]; then \
	    CARGO="$(CARGO)" scripts/test-unprivileged || status=$$?; \
	    unpriv="unprivileged run: $$( [ $$status -eq 0 ] && echo passed || echo "FAILED (exit $$status)" )"; \
	else \
	    unpriv="unprivileged run: skipped (the suite failed)"; \
	fi; \
	scripts/test-summary "$(FEATURES_FILE)" "$$main" "$$unpriv" || { \
	    echo "make test: the feature summary could not be printed" >&2; \
	    [ $$status -ne 0 ] || status=1; }; \
	exit $$status

build:
	$(CARGO) build --release

deps:
	@scripts/ensure-system-deps $(SYSTEM_PACKAGES)
