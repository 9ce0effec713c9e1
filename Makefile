# One place for every set-up step and check. `make check` is the test command of the
# README and of CI; `make reports` is the main job.
PYTHON ?= python3
TEX_PACKAGES = texlive-latex-base texlive-latex-recommended texlive-pictures \
	texlive-lang-cyrillic latex-cjk-chinese latex-cjk-chinese-arphic-gbsn00lp \
	cm-super-minimal lmodern poppler-utils

.PHONY: setup tex check reports bench

setup:
	$(PYTHON) -m pip install -q -e ".[test,plot]"

# TeX Live from Debian's packages, for the PDF write-ups and their tests
tex:
	@if command -v pdflatex >/dev/null && kpsewhich CJKutf8.sty t2aenc.def pgfplots.sty >/dev/null; then \
		echo "TeX Live: present"; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(TEX_PACKAGES) >/dev/null; \
	else \
		echo "TeX Live is missing: sudo apt-get install $(TEX_PACKAGES)"; \
	fi

check: setup tex
	$(PYTHON) -m pytest

reports: setup tex
	symroof verify
	symroof report --format md,tex,pdf --out reports

bench: setup
	$(PYTHON) benchmarks/run.py
