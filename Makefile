# make demo: create .venv, install, run the demo.  make test: install with test extras,
# generate test data, run the suite.  Both check prerequisites first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DATA := data

# The other Spark lines sparkprov supports (plan/versions/), each in its own venv with
# the same test extras (pip's cache keeps their wheels between runs). make test runs the
# whole suite on the newest line (.venv) and the core subset on the two oldest (3.5, the
# long-term line, and 4.0); make test-all-spark runs the core subset on every line.
SPARK_LINES := 3.5 4.0 4.1 4.2
SPARK_IN_TEST := 3.5 4.0
LINE_WORKERS ?= 2
SPARK_CORE := tests/plan/test_versions.py tests/plan/test_replies.py tests/reference tests/bench/test_tpch.py tests/rdd tests/cli/test_main.py

.PHONY: demo test test-all-spark line-venvs lint format bench prereqs clean

prereqs:
	@scripts/check_prereqs.sh $(PYTHON)

$(BIN)/python: | prereqs
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed

demo: prereqs $(VENV)/.installed
	$(BIN)/sparkprov demo

$(DATA)/tpch/sf0.01/.done: $(VENV)/.installed-test
	$(BIN)/python -c "from sparkprov.bench.tpch import generate; generate(0.01, '$(DATA)/tpch')"
	touch $@

$(DATA)/tpcds/sf0.01/.done: $(VENV)/.installed-test
	$(BIN)/python -c "from sparkprov.bench.tpcds import generate; generate(0.01, '$(DATA)/tpcds')"
	touch $@

test: prereqs $(VENV)/.installed-test $(DATA)/tpch/sf0.01/.done $(DATA)/tpcds/sf0.01/.done
	@command -v chromium >/dev/null 2>&1 || [ -n "$$SPARKPROV_CHROMIUM" ] || { \
	  echo "make test: the page's tests need Chromium: apt-get install chromium (Debian's package)," \
	       "or SPARKPROV_CHROMIUM=/path/to/chromium"; exit 1; }
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	# the class archive the suite's drivers start from (scripts/jvm_archive.py: 32 s, most
	# of it one core's) made while the lines' venvs install (48 s each, one after the other)
	$(MAKE) --no-print-directory -j2 $(VENV)/spark-classes.jsa line-venvs
	# two workers, each with its own SparkSession: much of a test's time is single-threaded
	# driver work (planning, py4j), so two at once keep both cores busy. A module's tests
	# go to one worker (--dist loadscope): a module-scoped fixture (the retries script's two
	# and a half minutes, a workflow's runs) is made once, not once per worker
	SPARKPROV_TPCH=$(DATA)/tpch SPARKPROV_TPCDS=$(DATA)/tpcds $(BIN)/python -m pytest -q -n 2 --dist loadscope --durations=15
	# the lines' suites side by side with a worker each: two JVMs started and warmed where
	# four were (two Spark 4.0 runs: 237 s against 288 s)
	$(MAKE) --no-print-directory -j2 --output-sync=target LINE_WORKERS=1 $(foreach line,$(SPARK_IN_TEST),test-spark$(line))

$(VENV)/spark-classes.jsa: $(VENV)/.installed-test scripts/jvm_archive.py
	$(BIN)/python scripts/jvm_archive.py $@ > $@.log 2>&1 || { tail -n 40 $@.log; exit 1; }

# the lines' venvs one after the other: two editable installs of one tree at once would
# share its build files
line-venvs:
	$(MAKE) --no-print-directory -j1 $(foreach line,$(SPARK_IN_TEST),.venv-spark$(line)/.installed-test)

.venv-spark%/.installed-test: pyproject.toml | prereqs
	$(PYTHON) -m venv .venv-spark$*
	.venv-spark$*/bin/python -m pip install --quiet --upgrade pip
	.venv-spark$*/bin/python -m pip install --quiet -e '.[test]' 'pyspark==$*.*'
	touch $@

# the core subset on one line: make test-spark4.0
test-spark%: .venv-spark%/.installed-test $(DATA)/tpch/sf0.01/.done $(DATA)/tpcds/sf0.01/.done
	SPARKPROV_TPCH=$(DATA)/tpch SPARKPROV_TPCDS=$(DATA)/tpcds .venv-spark$*/bin/python -m pytest -q -n $(LINE_WORKERS) --dist loadscope -p no:cacheprovider $(SPARK_CORE)

test-all-spark: $(foreach line,$(SPARK_LINES),test-spark$(line))

# made by a pattern rule, so make would delete it as an intermediate file
.PRECIOUS: .venv-spark%/.installed-test

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.installed-test
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(VENV)/.installed-test
	$(BIN)/sparkprov bench capture --suite tpch --sf 1 --queries 1,3,6 --repeat 5 --json bench-tpch.json

clean:
	rm -rf $(VENV) .venv-spark* $(DATA) .sparkprov
