# Build, test and run the course.  `make help` lists the targets.
#   make book       build the HTML book into _build/html (offline-capable, -W)
#   make test       book, print products + unit tests/doctests + nbval on every notebook +
#                   browser tests, in two lanes at a time (logs in _build/test-lanes/)
#   make lab        JupyterLab on _work/ (your copies of the labs), opening START.ipynb
#   make clean      remove build outputs and caches (make distclean: also .venv and _vendor)
#   make answers    every lab executed with its solutions into _build/answers (instructors)
#   make slides     one reveal.js deck per chapter and one per track into _build/slides (offline)
#   make pdf        the whole book as one handout PDF, _build/pdf/book.pdf
#   make handouts   print products: a learner handout per track, the instructor pack and
#                   the one-page cheat sheet (HTML and PDF), into _build/pdf
#   make wheelhouse wheels for an air-gapped classroom into _build/wheelhouse
#   make mutation   mutation testing of the model modules (slow; not part of make test)
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-builtin-rules

PYTHON    ?= python3
VENV      ?= .venv
BIN       := $(VENV)/bin
STAMP     := $(VENV)/.gpulab-install.stamp
LAB_PORT  ?= 8888
LAB_ARGS  ?= $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)
PYTEST    := $(BIN)/python -m pytest
SUDO      := $(shell if [ "$$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then echo sudo; fi)
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.d/gpulab-course.json

export PATH := $(abspath $(BIN)):$(PATH)
export PYDEVD_DISABLE_FILE_VALIDATION := 1

# ---- notebooks executed by nbval -------------------------------------------------------
# Directories nbval collects (*.ipynb, and MyST .md notebooks via the root conftest.py),
# minus the entries of labs/ignore_testing ("path/relative/to/repo  # reason", one a line).
# tests/book/test_notebook_set.py collects with exactly these arguments (`make print-nbval-args`)
# and fails if any notebook in the repository is not collected.
NBVAL_PATHS       := START.ipynb labs book
NBVAL_IGNORE_FILE := labs/ignore_testing
NBVAL_IGNORES      = $(shell if [ -f $(NBVAL_IGNORE_FILE) ]; then sed -e 's/\#.*//' $(NBVAL_IGNORE_FILE) | awk 'NF {print "--ignore=" $$1}'; fi)
NBVAL_ARGS         = --nbval-lax --nbval-current-env $(NBVAL_IGNORES) $(NBVAL_PATHS)

.PHONY: help venv chromium fonts vendor book test test-unit test-notebooks test-browser lab \
        test-build test-jupyterlab test-built \
        chapter-notebooks lab-work answers slides pdf handouts wheelhouse \
        clean distclean print-nbval-args mutation

help:
	@echo "make book       build the book into _build/html (creates .venv if needed)"
	@echo "make test       build the book, then run all tests (what CI runs: .ci/run)"
	@echo "make lab        JupyterLab on your copies of the labs (_work/): http://localhost:$(LAB_PORT)/lab/tree/START.ipynb"
	@echo "make clean      remove _build, caches; make distclean also removes .venv and _vendor"
	@echo "make answers    run every lab with solutions into _build/answers (fails on a failed check)"
	@echo "make slides     reveal.js decks per chapter and per track into _build/slides (open index.html)"
	@echo "make pdf        the book as one handout PDF: _build/pdf/book.pdf"
	@echo "make handouts   learner handout per track, instructor pack, cheat sheet: _build/pdf/"
	@echo "make wheelhouse wheels of requirements-learner.txt + gpulab into _build/wheelhouse"

# ---- environment ------------------------------------------------------------------------
venv: $(STAMP) $(LAB_OVERRIDES)

$(STAMP): requirements.txt pyproject.toml
	@if [ ! -x $(BIN)/python ]; then echo "==> creating virtual environment $(VENV)"; $(PYTHON) -m venv $(VENV); fi
	@echo "==> installing requirements.txt and gpulab (editable) into $(VENV)"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	@touch $@

# JupyterLab settings of the course: open Markdown/MyST .md files as notebooks (jupytext),
# not as text; no news pop-up and no update check.
$(LAB_OVERRIDES): jupyter/overrides.json $(STAMP)
	@mkdir -p $(@D)
	@cp jupyter/overrides.json $@

chromium:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  echo "==> installing chromium (apt-get)"; \
	  $(SUDO) apt-get update -qq; \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; \
	fi

# A CJK font for the PDFs (the Chinese quotes of the article pages): WenQuanYi Micro Hei
# from Debian's fonts-wqy-microhei (Apache-2.0 or GPL-3 with font exception; 1.6 MB),
# installed like Chromium above. Its outlines are TrueType, so Chromium embeds it as a
# named font (a CFF font such as Noto Sans CJK is printed as unnamed Type 3 glyphs).
fonts:
	@if ! fc-list 2>/dev/null | grep -q "WenQuanYi Micro Hei"; then \
	  echo "==> installing a CJK font (apt-get fonts-wqy-microhei)"; \
	  $(SUDO) apt-get update -qq; \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq fonts-wqy-microhei >/dev/null; \
	fi

vendor:
	@echo "==> vendoring MathJax, ipywidgets and Vega JS into _vendor/"
	@bash scripts/vendor_js.sh

# ---- book -------------------------------------------------------------------------------
# Chromium is needed by the browser tests only (test-browser), not to build the book.
book: venv vendor
	@# Sphinx copies html_extra_path only when some page is rewritten: start afresh when the
	@# vendored JS changed (executed notebooks stay cached in .jupyter_cache).
	@if [ -d _build/html ] && ! cmp -s _vendor/VERSIONS _build/html/VERSIONS; then \
	  echo "==> vendored JS changed: removing _build/html"; rm -rf _build/html _build/.doctrees; fi
	@# The execution cache is keyed on code cells only: when gpulab (code or data) changes,
	@# every chapter must run again or the book would show figures of the old model.
	@hash=$$(find gpulab -type f ! -path '*__pycache__*' | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16); \
	if [ "$$(cat .jupyter_cache/gpulab.hash 2>/dev/null)" != "$$hash" ]; then \
	  if [ -d .jupyter_cache ]; then echo "==> gpulab changed: re-executing every chapter"; fi; \
	  rm -rf .jupyter_cache _build/html _build/.doctrees; fi; \
	echo "==> building book (jupyter-book build -W -n --keep-going .)"; \
	start=$$(date +%s); \
	$(BIN)/jupyter-book build -W -n --keep-going . ; \
	echo "$$hash" > .jupyter_cache/gpulab.hash; \
	echo "==> book built in $$(( $$(date +%s) - start )) s"
	@echo "Open _build/html/index.html"

# ---- tests ------------------------------------------------------------------------------
# Two lanes at a time (2 cores: one runs while the other waits on a kernel or a browser).
#   phase 1: [book, answers, slides, pdf, handouts]  ||  [ruff, unit tests and doctests of
#            everything but tests/book, nbval on START.ipynb]
#   phase 2: [tests/book in JupyterLab]  ||  [tests/book on the built book: browser and
#            file checks of the book, answers, slides and PDFs]
# Each lane writes _build/test-lanes/<lane>.log; its tail is printed when the phase ends.
# Every suite runs even if another fails; the target fails if any did.
# GPULAB_REQUIRE_BOOK=1 turns "book not built / lab missing" skips into failures.
# Every notebook runs once: the chapters in the book build (tests/book/test_chapter_execution.py
# makes nbval's check on its executed notebooks), the labs with their solutions in
# `make answers` (tests/book/test_answers.py), START.ipynb under nbval. `make test-notebooks`
# runs nbval on every notebook.
LANE = _build/test-lanes
define run_lanes
	@mkdir -p $(LANE); for lane in $(1); do rm -f $(LANE)/$$lane.rc; done; pids=""; \
	for lane in $(1); do \
	  ( $(MAKE) --no-print-directory $$lane > $(LANE)/$$lane.log 2>&1 && echo 0 > $(LANE)/$$lane.rc \
	    || echo $$? > $(LANE)/$$lane.rc ) & pids="$$pids $$!"; \
	done; \
	for p in $$pids; do wait $$p || true; done; \
	for lane in $(1); do echo "==> [$(2)] $$lane: exit $$(cat $(LANE)/$$lane.rc)"; \
	  tail -n 25 $(LANE)/$$lane.log | sed 's/^/    /'; done
endef

test: venv chromium fonts vendor
	@mkdir -p $(LANE); date +%s > $(LANE)/start
	@echo "==> phase 1: the book and print products || lint, unit tests, nbval on START.ipynb"
	$(call run_lanes,test-build test-unit,phase 1)
	@echo "==> phase 2: JupyterLab || the built book (browser and file checks)"
	$(call run_lanes,test-jupyterlab test-built,phase 2)
	@status=0; failed=""; for lane in test-build test-unit test-jupyterlab test-built; do \
	  if [ "$$(cat $(LANE)/$$lane.rc 2>/dev/null)" != 0 ]; then status=1; failed="$$failed $$lane"; fi; done; \
	echo "==> tests finished in $$(( $$(date +%s) - $$(cat $(LANE)/start) )) s"; \
	if [ $$status -ne 0 ]; then echo "==> FAILED:$$failed (logs: $(LANE)/<lane>.log)"; exit 1; fi; \
	echo "==> all tests passed"

# The lanes (each also usable alone; test-jupyterlab and test-built need test-build first).
test-build: book answers slides pdf handouts

# Lint, the tests that need no built book, then nbval on START.ipynb: each step runs even
# if an earlier one failed; the target fails if any did.
test-unit: venv
	@status=0; \
	$(BIN)/ruff check gpulab tests benchmarks measure scripts conftest.py || status=1; \
	GPULAB_REQUIRE_BOOK=1 $(PYTEST) tests --ignore=tests/book --doctest-modules gpulab \
	  -m "not browser and not jupyterlab" || status=1; \
	$(MAKE) --no-print-directory test-notebooks NBVAL_PATHS="START.ipynb" || status=1; \
	exit $$status

test-jupyterlab: venv chromium
	GPULAB_REQUIRE_BOOK=1 $(PYTEST) tests/book -m "jupyterlab"

test-built: venv chromium
	GPULAB_REQUIRE_BOOK=1 $(PYTEST) tests/book -m "not jupyterlab"

# GPULAB_LAB_SOLUTIONS=1: the labs' solution cells fill in the answers, so that every
# "✓ check" cell really checks (students run without it and see "not attempted yet").
test-notebooks: venv
	GPULAB_REQUIRE_BOOK=1 GPULAB_LAB_SOLUTIONS=1 $(PYTEST) $(NBVAL_ARGS)

test-browser: venv chromium
	GPULAB_REQUIRE_BOOK=1 $(PYTEST) tests -m "browser or jupyterlab"

print-nbval-args:
	@echo $(NBVAL_ARGS)

# ---- instructor kit and classroom -------------------------------------------------------
# Answer keys: each lab in a fresh kernel with GPULAB_LAB_SOLUTIONS=1; fails when a lab
# raises (a failed ✓ check) or a check cell printed no ✓ line. Not committed (_build/).
answers: venv
	@echo "==> answer keys: every lab with its solutions, into _build/answers/"
	@$(BIN)/python scripts/build_answers.py --out _build/answers

# Slides: cut out of the built chapters (figure cells tagged `slide`, takeaways and
# equations with the class `slide`); reveal.js and MathJax from _vendor/ (offline).
# The track decks (scripts/track_slides.py) follow gpulab/data/course_tracks.yaml, with titles
# and equation symbols from book/instructor/track_slides.yaml; speaker notes: press S.
slides: book
	@echo "==> slides: one reveal.js deck per chapter and one per teaching track, into _build/slides/"
	@$(BIN)/python scripts/build_slides.py --html _build/html --out _build/slides

# Handout: every built page printed by headless Chromium and merged with pypdf (no TeX).
pdf: book chromium fonts
	@echo "==> handout PDF: _build/pdf/book.pdf"
	@$(BIN)/python scripts/build_pdf.py --html _build/html --out _build/pdf/book.pdf

# Print products (scripts/build_handouts.py): one document per product printed at once, so
# page numbers run on; contents and answer references numbered from a first printing.
handouts: book answers chromium fonts
	@echo "==> print products: track handouts, instructor pack, cheat sheet into _build/pdf/"
	@$(BIN)/python scripts/build_handouts.py --build _build --out _build/pdf

# Air-gapped classroom: every wheel a learner needs (and the labs), for this machine's
# platform and Python by default. For other learner machines pass pip's platform options, e.g.
#   make wheelhouse WHEELHOUSE_ARGS="--only-binary=:all: --platform manylinux2014_x86_64 --python-version 3.11"
# Install offline: pip install --no-index --find-links _build/wheelhouse -r _build/wheelhouse/requirements-learner.txt gpulab
WHEELHOUSE      ?= _build/wheelhouse
WHEELHOUSE_ARGS ?=
wheelhouse: venv
	@echo "==> wheelhouse: requirements-learner.txt and gpulab into $(WHEELHOUSE)/"
	@rm -rf $(WHEELHOUSE) && mkdir -p $(WHEELHOUSE)
	$(BIN)/python -m pip download --disable-pip-version-check --dest $(WHEELHOUSE) $(WHEELHOUSE_ARGS) -r requirements-learner.txt
	$(BIN)/python -m pip wheel --disable-pip-version-check --no-deps --no-build-isolation --wheel-dir $(WHEELHOUSE) .
	@rm -rf build   # setuptools' scratch folder from the gpulab wheel
	@cp requirements-learner.txt $(WHEELHOUSE)/
	@mkdir -p $(WHEELHOUSE)/labs && cp labs/README.md labs/*.ipynb $(WHEELHOUSE)/labs/
	@echo "==> $$(ls $(WHEELHOUSE) | wc -l) files, $$(du -sh $(WHEELHOUSE) | cut -f1) in $(WHEELHOUSE)/"

# ---- maintenance: mutation testing -----------------------------------------------------
# mutmut (requirements-dev.txt) on the model modules, one module at a time under nice, each
# with only the tests that cover it and a seeded sample of its mutants; not part of `make test`.
#   make mutation MUTATION_ARGS="units links --max-mutants 0"   (all mutants of two modules)
MUTATION_ARGS ?=
mutation: venv
	@$(BIN)/python -c "import mutmut" 2>/dev/null || \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(BIN)/python scripts/mutation.py $(MUTATION_ARGS)

# ---- JupyterLab -------------------------------------------------------------------------
# The server's root is the learner's working folder $(LAB_WORK)/ (see lab-work), which looks
# like the repository: START.ipynb lists the labs and the chapters. Chapters open as executed
# copies in _build/chapters/ (their prose shows the numbers; the book's execution cache is
# reused when `make book` ran); jupyter/jupyter_server_config.py makes the .md sources
# read-only when opened as notebooks, so they are never rewritten.
chapter-notebooks: venv
	@echo "==> writing executed chapter notebooks into _build/chapters/ (first time: about a minute per chapter)"
	@$(BIN)/python jupyter/chapter_notebooks.py

# The learner's working folder. Its labs/ holds the learner's own copies of labs/*.ipynb and
# labs/README.md, copied once and never overwritten: saving (and JupyterLab's autosave,
# every two minutes) writes there, never into a tracked lab, so `git pull` never conflicts
# with a learner's work. The entries of LAB_LINKS (what START.ipynb, the labs and the
# chapters link to) are relative symbolic links to the repository's, so START.ipynb's links
# and the chapter copies' relative links to labs/ open the copies. $(LAB_WORK)/.gitignore ignores
# the whole folder. A lab that changed after it was copied is named, with how to start again.
LAB_WORK  := _work
LAB_LINKS := START.ipynb README.md intro.md book _build gpulab measure tests

lab-work:
	@mkdir -p $(LAB_WORK)/labs
	@[ -f $(LAB_WORK)/.gitignore ] || echo '*' > $(LAB_WORK)/.gitignore
	@find $(LAB_WORK) -maxdepth 1 -type l ! -exec test -e {} \; -exec rm {} \;
	@for f in $(LAB_LINKS); do \
	  if [ -e $$f ] && ! [ -e $(LAB_WORK)/$$f ] && ! [ -L $(LAB_WORK)/$$f ]; then ln -s ../$$f $(LAB_WORK)/$$f; fi; \
	done
	@for f in labs/*.ipynb labs/README.md; do \
	  w=$(LAB_WORK)/$$f; \
	  if [ ! -e $$w ]; then cp $$f $$w; echo "==> your copy of $$f: $$w"; \
	  elif [ $$f -nt $$w ] && ! cmp -s $$f $$w; then \
	    echo "note: $$f changed after you copied it; your copy $$w is kept. To start again from the new version, rename your copy and run make lab again."; \
	  fi; \
	done

lab: venv chapter-notebooks lab-work
	@echo "==> starting JupyterLab on $(LAB_WORK)/ (your copies of the labs) at http://localhost:$(LAB_PORT)/lab/tree/START.ipynb (Ctrl+C to stop)"
	JUPYTER_CONFIG_PATH=$(CURDIR)/jupyter$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH} \
	  $(BIN)/python -m jupyterlab --no-browser --port=$(LAB_PORT) --ServerApp.root_dir=$(CURDIR)/$(LAB_WORK) \
	  --LabApp.default_url=/lab/tree/START.ipynb $(LAB_ARGS)

# ---- cleaning ---------------------------------------------------------------------------
clean:
	@echo "==> removing build outputs and caches"
	rm -rf _build .jupyter_cache .pytest_cache .hypothesis
	find . -path ./.venv -prune -o -type d \( -name __pycache__ -o -name .ipynb_checkpoints \) -print0 | xargs -0 rm -rf

distclean: clean
	rm -rf $(VENV) _vendor node_modules
