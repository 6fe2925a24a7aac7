# softsim: the README's two commands.
#   make run    create .venv if missing, install softsim into it, open the app on the default scene
#   make test   same set-up, system packages for headless OpenGL (root on Debian), lint, all tests under Xvfb
#   make bench  run every benchmark and rewrite benchmarks/RESULTS.md

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

# Debian packages Qt's xcb platform plugin and VTK's OpenGL need under Xvfb.
SYSTEM_PACKAGES := xvfb xauth libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 \
	libxcb-xinerama0 libxcb-xkb1 libxkbcommon-x11-0 libxcb-cursor0 libxcb-shape0 libxcb-randr0 \
	libxcb-xfixes0 libxcb-sync1 libxcb-glx0 libx11-xcb1 libxrender1 libxi6 libsm6 libice6 \
	libgl1 libegl1 libglx-mesa0 libgl1-mesa-dri libfontconfig1 libdbus-1-3 libglib2.0-0

.PHONY: run test lint bench system-deps clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "softsim needs Python >= 3.11, found " + sys.version.split()[0])'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	@# numba's on-disk caches name the modules they were compiled in: drop them when the package changes
	find app mechanics meshes -name '*.nbi' -delete -o -name '*.nbc' -delete
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/softsim

system-deps:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing system packages: $$missing"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	else \
		echo "warning: missing system packages (install them as root): $$missing" >&2; \
	fi

lint: $(STAMP)
	$(VENV)/bin/ruff check .

test: $(STAMP) system-deps lint
	@$(PY) -m pytest; status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests" >&2; fi; \
	exit $$status

bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[test,bench]"
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
