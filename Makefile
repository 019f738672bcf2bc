# Two commands for a newcomer: `make demo` (the main job, offline) and `make test` (the harness's own tests).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
APT_PACKAGES := xvfb xauth chromium xclip xdotool fonts-wqy-microhei python3-tk libxcb-shm0
WORKERS ?= 2

.PHONY: setup demo test bench soak lock clean judge-calibration

setup: $(VENV)/.installed
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
	@# Allure 3 (npm package `allure`, pinned: the report test reads its DOM) for `webeval report`, project-local.
	@if [ ! -x .tools/allure/node_modules/.bin/allure ]; then \
	  echo "installing Allure 3 into .tools/allure"; \
	  if ! command -v npm >/dev/null; then \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs npm >/dev/null; \
	  fi; \
	  mkdir -p .tools && printf '*\n' > .tools/.gitignore; \
	  npm install --prefix .tools/allure --no-audit --no-fund --loglevel=error allure@3.18.0 >/dev/null; \
	fi

# The exact versions of constraints.txt (the lock; `make lock` renews it). A venv made before the distribution was
# renamed pytest-webeval still holds `webeval`: it goes first (after, it would take the `webeval` command with it).
$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	@echo "installing webeval and its Python packages into $(VENV) (versions from constraints.txt)"
	@$(PY) -m pip install -q --upgrade pip > $(VENV)/install.log 2>&1 && \
	  $(PY) -m pip uninstall -q -y webeval >> $(VENV)/install.log 2>&1 && \
	  $(PY) -m pip install -q -c constraints.txt -e '.[test]' >> $(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@touch $@

lock: setup
	$(PY) -m pip install -q --upgrade --upgrade-strategy eager -e '.[test]'
	$(PY) -m tests.lock write
	@touch $(VENV)/.installed

demo: setup
	@run=reports/runs/$$(date +%Y%m%d-%H%M%S); \
	$(VENV)/bin/pytest -n $(WORKERS) suites/local -q --run-dir $$run $(ARGS); status=$$?; \
	$(VENV)/bin/webeval report $$run || status=$$?; \
	exit $$status

test: setup
	$(VENV)/bin/pytest -n $(WORKERS) --dist loadgroup tests -q $(ARGS)

# A labelled evidence set for measuring judges (docs/judges.md): the offline oracle, then its variants.
judge-calibration: setup
	@set -e; out=reports/calibration; rm -rf $$out/oracle $$out/set; \
	$(VENV)/bin/pytest -n $(WORKERS) suites/local -q -p no:randomly --run-dir $$out/oracle $(ARGS); \
	$(VENV)/bin/webeval calibrate $$out/oracle --tasks webeval/benchmarks/local/task_files --out $$out/set; \
	echo "judge it: webeval reverify $$out/set --judge-protocol webvoyager --judge-profile NAME"; \
	echo "score it: webeval judge-agreement $$out/set"

# BrowserGym 0.14 for the side-by-side benchmark (bench/browsergym.py), in a venv of its own: it pins Playwright 1.44.
# Where it cannot be installed, the benchmark says so in one line and the other figures still run.
BROWSERGYM := .tools/browsergym
$(BROWSERGYM)/.installed:
	@echo "installing BrowserGym 0.14 into $(BROWSERGYM)"
	@mkdir -p .tools && printf '*\n' > .tools/.gitignore
	@python3 -m venv $(BROWSERGYM) && $(BROWSERGYM)/bin/pip install -q browsergym-core==0.14.3 \
	  browsergym-miniwob==0.14.3 > $(BROWSERGYM)/install.log 2>&1 && touch $@

bench: setup
	@$(MAKE) --no-print-directory $(BROWSERGYM)/.installed || echo "bench: BrowserGym could not be installed (see $(BROWSERGYM)/install.log)"
	$(PY) bench/run.py

# Five whole runs of the offline suite at -n 8: processes, temporary files and memory left behind (bench/soak.py).
soak: setup
	$(PY) bench/run.py --only soak

clean:
	rm -rf $(VENV) reports
