import os from 'node:os'
import path from 'node:path'

import {configDefaults, defineConfig} from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The judge lane (Airflow's own releases beside airlock) runs with `npm run test:airflow`.
    exclude: [...configDefaults.exclude, 'test/judge/**'],
    globalSetup: ['test/support/globalSetup.ts'],
    // Files run in parallel, each against its own database cloned from a template.
    pool: 'forks',
    maxWorkers: 2,
    // Airflow's configuration as airlock reads it (src/airflow/config.ts): never the developer's
    // ~/airflow/airflow.cfg; a test that wants a setting sets its variable or file.
    env: {AIRFLOW_CONFIG: path.join(os.tmpdir(), 'airlock-tests-no-airflow.cfg')},
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
})
