#!/usr/bin/env bash
# Checks what sparkprov needs before anything is installed, and says what is missing.
set -u
py="${1:-python3}"
ok=1
if ! command -v "$py" >/dev/null 2>&1; then
  echo "missing: $py (Python >= 3.10 is required; set PYTHON=/path/to/python3)" >&2; ok=0
elif ! "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
  echo "too old: $("$py" --version 2>&1) (Python >= 3.10 is required; set PYTHON=/path/to/python3)" >&2; ok=0
elif ! "$py" -c 'import venv, ensurepip' 2>/dev/null; then
  echo "missing: the venv module for $py (on Debian: apt-get install python3-venv)" >&2; ok=0
fi
java_bin="${JAVA_HOME:+$JAVA_HOME/bin/}java"
if ! command -v "$java_bin" >/dev/null 2>&1; then
  echo "missing: java (Java 17 or newer is required by Spark 4; install a JDK and set JAVA_HOME)" >&2; ok=0
else
  ver=$("$java_bin" -version 2>&1 | sed -n 's/.*version "\([0-9]*\)[."].*/\1/p' | head -n1)
  if [ -z "$ver" ] || [ "$ver" -lt 17 ]; then
    echo "too old: java ${ver:-unknown} (Java 17 or newer is required by Spark 4)" >&2; ok=0
  fi
fi
[ "$ok" = 1 ] || exit 1
