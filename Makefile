# Two entry points for a fresh machine: `make demo` and `make test`.
# Both create .venv when missing and (re)install when the requirements change.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_DIR ?= demo_output
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: demo test install clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) requirements.txt requirements-dev.txt pyproject.toml
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q tests

demo: $(STAMP)
	$(PY) -m albert_tf.model_report --output_dir=$(DEMO_DIR)

clean:
	rm -rf $(VENV) $(DEMO_DIR)
