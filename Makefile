# One place for every set-up step and check. `make check` is the test command of the
# README and of CI; `make reports` is the main job. Every target runs with $(PYTHON), so
# `make check PYTHON=venv/bin/python` checks inside that environment. Python packages come
# at the exact versions of constraints.txt. A new set-up step is one more target in SETUP.
PYTHON ?= python3
PIP = $(PYTHON) -m pip install -q -c constraints.txt
TEX_PACKAGES = texlive-latex-base texlive-latex-recommended texlive-pictures \
	texlive-lang-cyrillic latex-cjk-chinese latex-cjk-chinese-arphic-gbsn00lp \
	cm-super-minimal lmodern poppler-utils

BROWSER_PACKAGES = chromium nodejs npm
SETUP = python tex katex

.PHONY: setup python tex browser katex check reports bench

setup: $(SETUP)

# the package with its extras, editable, at the locked versions
python:
	$(PIP) -e ".[test,plot]"

# TeX Live from Debian's packages, for the PDF write-ups and their tests
tex:
	@if command -v pdflatex >/dev/null && kpsewhich CJKutf8.sty t2aenc.def pgfplots.sty >/dev/null; then \
		echo "TeX Live: present"; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(TEX_PACKAGES) >/dev/null; \
	else \
		echo "TeX Live is missing: sudo apt-get install $(TEX_PACKAGES)"; \
	fi

# Chromium (the HTML write-ups' browser tests) and node/npm (KaTeX) from Debian's packages
browser:
	@if command -v chromium >/dev/null && command -v npm >/dev/null; then \
		echo "Chromium and npm: present"; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(BROWSER_PACKAGES) >/dev/null; \
	else \
		echo "Chromium or npm is missing: sudo apt-get install $(BROWSER_PACKAGES)"; \
	fi

# KaTeX from the npm registry, as package-lock.json pins it (the HTML build copies its dist)
katex: browser
	@if [ -f node_modules/katex/dist/katex.min.js ]; then echo "KaTeX: present"; \
	elif command -v npm >/dev/null; then npm ci --no-audit --no-fund --silent; fi

check: setup
	$(PYTHON) -m pytest

reports: setup
	$(PYTHON) -m symroof verify
	$(PYTHON) -m symroof report --format md,tex,pdf,html --out reports

bench: python
	$(PYTHON) benchmarks/run.py
