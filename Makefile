# One place for every set-up step and check. `make reports` is the main job, `make check` the
# tests (the README's two commands; CI runs `make check`). Python packages go into a virtual
# environment of the project (.venv/, from the system's python3), never into the system
# interpreter, at the exact versions of constraints.txt; a stamp in the environment skips pip
# until pyproject.toml or constraints.txt changes. `make check PYTHON=path/to/venv/bin/python`
# checks inside another environment. Tools from Debian (TeX Live, Chromium, npm, fonts) are
# installed only where missing, one set at a time, each with a line that says why
# (scripts/apt-need).
SYSTEM_PYTHON ?= python3
VENV ?= .venv
PYTHON ?= $(VENV)/bin/python
PIP = $(PYTHON) -m pip install -q --disable-pip-version-check -c constraints.txt
STAMP = $(dir $(PYTHON)).symroof-setup
APT_NEED = sh scripts/apt-need
# pytest-xdist's workers: one per core (2 on the reference machine)
JOBS ?= auto

.PHONY: setup python tex browser katex check check-full reports notebook bench shell docs

# how to run the command after set-up: the environment's bin/ is not on a new shell's PATH
BIN = $(dir $(PYTHON))
RUN_HINT = @echo "run symroof as $(BIN)symroof, or put it on PATH for this shell with '. $(BIN)activate', or open a shell with it: make shell"

setup: python tex katex
	$(if $(filter setup,$(MAKECMDGOALS)),$(RUN_HINT))

python: $(STAMP)

# the project's environment: made once from the system interpreter (Debian's python3 needs
# python3-venv for it); the system's own packages are not touched
$(VENV)/bin/python:
	@echo "setup: a virtual environment in $(VENV) ($(SYSTEM_PYTHON) -m venv)"
	@$(SYSTEM_PYTHON) -m venv $(VENV) 2>/dev/null || { rm -rf $(VENV); \
		$(APT_NEED) "Python's venv module, for $(VENV)" python3-venv && \
		$(SYSTEM_PYTHON) -m venv $(VENV); }

# the package with its extras, editable, at the locked versions; again only when the lock or
# pyproject.toml is newer than the stamp
$(STAMP): pyproject.toml constraints.txt | $(PYTHON)
	@echo "setup: symroof with its test, plot and docs extras into $(dir $(PYTHON)) (pip, at the versions of constraints.txt)"
	@$(PIP) -e ".[test,plot,docs]"
	@touch $@

# TeX Live, for the PDF write-ups and their tests: each piece only where kpsewhich or PATH
# lacks it (a TeX Live from elsewhere counts)
tex:
	@command -v pdflatex >/dev/null || $(APT_NEED) "pdflatex, for the PDF write-ups" texlive-latex-base
	@kpsewhich t2aenc.def lmodern.sty >/dev/null || $(APT_NEED) "Cyrillic and Latin Modern fonts in PDFs" texlive-lang-cyrillic cm-super-minimal lmodern
	@kpsewhich pgfplots.sty >/dev/null || $(APT_NEED) "plots in PDFs (pgfplots)" texlive-pictures texlive-latex-recommended
	@kpsewhich CJKutf8.sty c70gbsn.fd >/dev/null || $(APT_NEED) "Chinese in PDFs (CJK with the Arphic GB Song font)" latex-cjk-chinese latex-cjk-chinese-arphic-gbsn00lp
	@command -v pdftoppm >/dev/null || $(APT_NEED) "PDF pages as images, for the PDF tests" poppler-utils

# Chromium (the HTML write-ups' browser tests), a CJK font so Chinese pages show no boxes,
# and npm (KaTeX): npm only where it is missing, since a Node.js from another source (such as
# NodeSource's) ships its own npm and conflicts with Debian's
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || $(APT_NEED) "Chromium, for the HTML write-ups' browser tests" chromium
	@fc-list :lang=zh family 2>/dev/null | grep -q . || $(APT_NEED) "a Chinese font, for the HTML write-ups" fonts-wqy-microhei
	@fc-list :charset=1f5a5 family 2>/dev/null | grep -q . || $(APT_NEED) "an emoji font, for the HTML write-ups' section titles" fonts-noto-color-emoji
	@command -v node >/dev/null || $(APT_NEED) "Node.js, for KaTeX" nodejs
	@command -v npm >/dev/null || $(APT_NEED) "npm, for KaTeX" npm

# KaTeX from the npm registry, as package-lock.json pins it (the HTML build copies its dist)
katex: browser
	@[ -f node_modules/katex/dist/katex.min.js ] || { echo "setup: KaTeX from the npm registry (npm ci, as package-lock.json pins it)"; \
		npm ci --no-audit --no-fund --silent; }

# the tests, on every core; hypothesis's "ci" profile where CI is set
check: setup
	$(PYTHON) -m pytest -n $(JOBS)

# the same with the full hypothesis profile (more examples for the slow laws)
check-full: setup
	SYMROOF_HYPOTHESIS=full $(PYTHON) -m pytest -n $(JOBS)

reports: setup
	$(PYTHON) -m symroof verify
	$(PYTHON) -m symroof report --format md,tex,pdf,html --out reports
	$(RUN_HINT)

# a shell (yours, from $$SHELL) with the environment's bin/ first on PATH: symroof, python,
# pytest and jupyter as the README writes them; leave it with exit
shell: python
	@echo "symroof is on PATH in this shell ($(abspath $(BIN))); leave it with exit"
	@VIRTUAL_ENV="$(abspath $(BIN)..)" PATH="$(abspath $(BIN)):$$PATH" $${SHELL:-sh}

# JupyterLab in the project environment, for examples/symroof.ipynb
notebook: python
	@$(PIP) -e ".[notebook]"
	@echo "run: $(dir $(PYTHON))jupyter lab examples/symroof.ipynb"

# the documentation site from docs/ (MkDocs, mkdocstrings for the API) into site/; a warning
# (a broken link, a page the nav cannot place, a docstring reference) fails the build
docs: python
	$(PYTHON) -m mkdocs build --strict --quiet
	@echo "docs: open site/index.html"

bench: python
	$(PYTHON) benchmarks/run.py
