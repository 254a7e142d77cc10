#!/usr/bin/env bash
# Installs Airflow's own releases for the judge lane, one virtual environment per release in
# releases.tsv (or the ones named), from the frozen requirements/airflow-X.txt, into a cache
# outside the checkout: $AIRLOCK_AIRFLOW_CACHE, else $XDG_CACHE_HOME/airlock/airflow, else
# ~/.cache/airlock/airflow. An environment already installed from the same file is kept as it is.
#
#   scripts/airflow/install.sh [VERSION...]
#
# Exit 0 when every environment is ready; 3 when Python 3 is missing (the lane is skipped); 4 when
# Python has no venv or pip; 5 when pip could not install (most often: the package index is not
# reachable). Each failure says which on stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${AIRLOCK_AIRFLOW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/airlock/airflow}

python=${AIRLOCK_PYTHON:-python3}
if ! command -v "$python" >/dev/null 2>&1; then
  echo "airflow install: $python not found; the judge lane needs Python 3.11 with venv and pip" >&2
  exit 3
fi
if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  echo "airflow install: $python has no venv or ensurepip module (Debian: apt-get install python3-venv)" >&2
  exit 4
fi
py_version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ "$py_version" != 3.11 ]; then
  echo "airflow install: warning: the requirements were resolved for Python 3.11, this is $py_version" >&2
fi

mkdir -p "$cache"
grep -v '^#' "$here/releases.tsv" | while read -r airflow _sdk _released; do
  if [ $# -gt 0 ] && [[ " $* " != *" $airflow "* ]]; then continue; fi
  requirements="$here/requirements/airflow-$airflow.txt"
  venv="$cache/$airflow"
  want=$(sha256sum "$requirements" | cut -d' ' -f1)
  if [ -x "$venv/bin/airflow" ] && [ "$(cat "$venv/.airlock-requirements" 2>/dev/null)" = "$want" ]; then
    echo "airflow $airflow: ready in $venv"
    continue
  fi
  start=$SECONDS
  rm -rf "$venv"
  "$python" -m venv "$venv"
  # --no-deps: the file is the whole resolution, so pip installs exactly it and resolves nothing.
  if ! "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$requirements" 2>"$cache/pip-$airflow.log"; then
    grep -v '^WARNING: Location' "$cache/pip-$airflow.log" | tail -n 20 >&2
    echo "airflow install: pip could not install Airflow $airflow from $requirements (is the package index reachable? full log: $cache/pip-$airflow.log)" >&2
    rm -rf "$venv"
    exit 5
  fi
  echo "$want" >"$venv/.airlock-requirements"
  echo "airflow $airflow: installed in $venv in $((SECONDS - start)) s"
done
