# Set-up and checks. `make test` and `make demo` work on a fresh Debian machine with Python 3.10+
# and Rust: they install what they need first.

PYTHON ?= python3
PIP := $(PYTHON) -m pip
# cargo beside other jobs of `make -j2`: without make's jobserver descriptors (not handed to a
# recipe that is no make), which cargo and rustdoc would warn they cannot open
CARGO := env -u MAKEFLAGS -u MFLAGS cargo
export PIP_ROOT_USER_ACTION := ignore
# Python caches what it compiles (__pycache__, ignored by git), whatever the environment says: with
# PYTHONDONTWRITEBYTECODE set (as in container images), every `python -m pounder` the tests start
# compiles pounder from source again (0.5 s of CPU each, about 200 in the shared tests), and every
# pytest worker rewrites every test module again.
unexport PYTHONDONTWRITEBYTECODE
# Debian packages the tests use: Apache prefork + mod_perl, Starman (PSGI) and strace (server-side
# tests), nginx and wrk and ab (apache2-utils) for benchmarks/peers.py, Prometheus (a fixture of its own
# receives --metrics-out and scrapes pounder top --prometheus; the Debian service is never started).
APT_PACKAGES := apache2 libapache2-mod-perl2 starman libplack-perl strace chromium \
	php-fpm nginx uwsgi uwsgi-plugin-python3 puma unicorn libdevel-nytprof-perl linux-perf tmux openssl prometheus
APT_BENCH_PACKAGES := nginx wrk apache2-utils util-linux cmake
OHA_VERSION := 1.16.0

.PHONY: test demo build dist container-check deps deps-system deps-python lint lint-python lint-rust cargo-test pytest pytest-shared pytest-alone bench-peers bench-precision bench-vs-rules bench-tools clean

# Side by side where nothing waits: the release build (it ends on one core: the engine and the
# link-time optimisation, codegen-units = 1) with the engine's debug tests (cargo locks
# target/release and target/debug apart; the engine's tests time schedules, so they do not run
# beside the tests below); then the lints beside the tests that may share the machine; last the
# tests that measure time, rates or CPU, alone on the machine.
test: deps
	$(MAKE) --no-print-directory -j2 --output-sync=target build cargo-test
	$(MAKE) --no-print-directory -j2 --output-sync=target lint pytest-shared
	$(MAKE) --no-print-directory pytest-alone

deps: deps-system deps-python

# apt only when root and something is missing; otherwise say what to install.
deps-system:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	else echo "note: missing Debian packages:$$missing (tests that need them are skipped)"; fi

deps-python:
	$(PIP) install -q --disable-pip-version-check "maturin>=1.7,<2" "pytest>=8" "pytest-xdist>=3.5" "jsonschema>=4.18" "xmlschema>=3" "gunicorn>=22" \
		"ruff>=0.5" "mypy>=1.10" typer rich psutil types-psutil types-jsonschema "jinja2>=3.1" "matplotlib>=3.8" "ray>=2.60,<3" "py-spy>=0.4" "django>=4.2" \
		"prometheus-client>=0.20" "pyyaml>=6" \
		"opentelemetry-sdk>=1.39" "opentelemetry-exporter-otlp-proto-http>=1.39" "opentelemetry-exporter-prometheus-remote-write>=0.60b0"

# Builds the Rust extension (release) and installs the package in editable mode.
build:
	$(PIP) install -q --disable-pip-version-check --no-build-isolation -e .

# The wheel and the sdist users install (`pip install dist/pounder-*.whl`, `pipx install ...`), in dist/:
# one abi3 wheel for every CPython >= 3.10, release, tagged with the lowest manylinux its symbols
# allow, checked by maturin's own auditwheel; built by python/pounder/_dist.py (its documentation
# says how) with the interpreter and the target/ of `make build`: cargo reuses that build.
dist:
	PYTHONPATH=python $(PYTHON) -m pounder._dist --sdist dist

# The container image's recipe (container/install.sh, which container/Containerfile runs) tested
# without a container tool: container/rootfs.sh builds the image's Debian root with mmdebstrap,
# installs the wheel in it with chroot and runs pounder there, Ray agent included (root; about 1 min).
container-check: dist
	@command -v mmdebstrap >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null; }
	bash container/rootfs.sh $$(ls dist/pounder-*.whl | head -1)

lint: lint-python lint-rust

lint-python:
	$(PYTHON) -m ruff check python tests benchmarks
	$(PYTHON) -m mypy

lint-rust:
	@if cargo clippy --version >/dev/null 2>&1; then $(CARGO) clippy --workspace -q -- -D warnings; \
	else echo "note: cargo clippy is not installed (rustup component add clippy); skipped"; fi

cargo-test:
	$(CARGO) test --workspace --exclude pounder-py -q

# The end-to-end tests that measure time, rates or CPU (marked `alone` by tests/e2e/conftest.py)
# run one at a time, alone on the machine; the rest, end-to-end files that check only what was
# sent, counted or written among them, run on three workers (pytest-xdist; most of them wait on
# servers: two would leave a core idle), each taking the next test when it is free (worksteal).
pytest: pytest-shared pytest-alone

pytest-shared:
	$(PYTHON) -m pytest -q -n 3 --dist worksteal -m "not alone" tests

pytest-alone:
	$(PYTHON) -m pytest -q -m alone tests/e2e

demo: deps-python build
	rm -rf pounder-demo-results
	$(PYTHON) -m pounder tune --demo --results pounder-demo-results --report pounder-demo-report.html

bench-peers: build bench-tools
	$(PYTHON) benchmarks/peers.py

# benchmarks/precision.py: open-loop precision of the io_uring and the epoll path (nginx, the freeze test server).
bench-precision: build bench-tools
	$(PYTHON) benchmarks/precision.py

# benchmarks/vs_rules.py: pounder tune's recommendation against the rules of thumb (gunicorn 2 x cores + 1, Puma's
# deployment guide, php-fpm's RAM / child, Apache's and Starman's stock settings), one pounder run per app.
bench-vs-rules: build
	$(PYTHON) benchmarks/vs_rules.py

# The peers: wrk and ab from Debian, oha from crates.io (built once into benchmarks/.tools, unless on PATH).
bench-tools:
	@missing=""; for p in $(APT_BENCH_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; fi
	@if [ ! -x benchmarks/.tools/bin/oha ] && ! command -v oha >/dev/null; then \
		echo "building oha $(OHA_VERSION) from crates.io into benchmarks/.tools (a few minutes)"; \
		cargo install oha --version $(OHA_VERSION) --locked --root benchmarks/.tools -q; fi

clean:
	cargo clean
	rm -rf build dist python/pounder/*.so

# The hostile pass of issues 25 and 39 (tests/families/run.py): 527 faults and bad inputs, each held to
# the promises; root (tmpfs mounts, unshare, prlimit), about 13 minutes; not part of `make test`.
.PHONY: families
families: build
	$(PYTHON) tests/families/run.py

# The man page docs/man/pounder.1 and docs/reference/cli.md, made again from every command's --help
# (tests/test_docs_man.py and tests/test_docs_cli.py fail when they differ from it), from this
# checkout's python/.
.PHONY: man
man:
	PYTHONPATH=python $(PYTHON) tests/tools/man_page.py
	PYTHONPATH=python $(PYTHON) tests/tools/cli_reference.py
