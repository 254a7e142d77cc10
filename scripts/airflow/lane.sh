#!/usr/bin/env bash
# `npm run test:airflow`: the judge lane. Installs what is missing of Airflow's releases
# (install.sh), then runs test/judge/ against them. Without Python the lane is skipped, and says why;
# any other install failure fails it. Extra arguments go to vitest.
set -uo pipefail
cd "$(dirname "$0")/../.."
start=$SECONDS
status=0
bash scripts/airflow/install.sh || status=$?
if [ "$status" -eq 3 ]; then
  echo "airlock judge lane: skipped (no Python 3 on this machine; the lane installs Airflow's releases with it)"
  exit 0
elif [ "$status" -ne 0 ]; then
  echo "airlock judge lane: FAILED: Airflow's releases could not be installed (above)"
  exit "$status"
fi
echo "airlock judge lane: Airflow's releases ready in $((SECONDS - start)) s"
npm run build --silent && npx vitest run --config vitest.judge.config.ts "$@"
