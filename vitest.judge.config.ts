import os from 'node:os'
import path from 'node:path'

import {defineConfig} from 'vitest/config'

/**
 * The judge lane (`npm run test:airflow`): Airflow's own releases, installed by
 * scripts/airflow/install.sh, run beside airlock on twin databases (docs/testing.md).
 */
export default defineConfig({
  test: {
    include: ['test/judge/**/*.judge.test.ts'],
    globalSetup: ['test/judge/support/globalSetup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    env: {AIRFLOW_CONFIG: path.join(os.tmpdir(), 'airlock-tests-no-airflow.cfg')},
    testTimeout: 300_000,
    hookTimeout: 600_000,
  },
})
