#!/usr/bin/env bash
# Re-resolves scripts/airflow/requirements/airflow-X.txt for each release in releases.tsv (or the
# ones named): apache-airflow-core, its task SDK and the postgres and standard providers, with every
# dependency as the package index served it at the end of the release's day. Airflow's own
# constraint files, which pin the same thing, cannot be reached from here; a resolution cut off at
# the release date is the nearest reproducible stand-in. install.sh installs from these files
# exactly (--no-deps), so the lane is the same on every machine until someone re-freezes.
#
#   scripts/airflow/freeze.sh [VERSION...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${AIRLOCK_AIRFLOW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/airlock/airflow}
tools="$cache/tools"
if [ ! -x "$tools/bin/uv" ]; then
  python3 -m venv "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check 'uv==0.13.10'
fi
next_day() { python3 -c 'import sys, datetime; print(datetime.date.fromisoformat(sys.argv[1]) + datetime.timedelta(days=1))' "$1"; }
grep -v '^#' "$here/releases.tsv" | while read -r airflow sdk released; do
  if [ $# -gt 0 ] && [[ " $* " != *" $airflow "* ]]; then continue; fi
  cutoff=$(next_day "$released")
  printf '%s\n' "apache-airflow-core==$airflow" "apache-airflow-task-sdk==$sdk" \
    apache-airflow-providers-postgres apache-airflow-providers-standard >"$cache/top-$airflow.txt"
  "$tools/bin/uv" pip compile --quiet --python-version 3.11 --exclude-newer "$cutoff" --no-header \
    --output-file "$here/requirements/airflow-$airflow.txt" "$cache/top-$airflow.txt"
  sed -i "1i # apache-airflow-core $airflow with its task SDK $sdk and the postgres and standard providers,\n# resolved by scripts/airflow/freeze.sh as the package index stood before $cutoff." \
    "$here/requirements/airflow-$airflow.txt"
  echo "froze $airflow ($(grep -c '==' "$here/requirements/airflow-$airflow.txt") packages, index as of $cutoff)"
done
