import os from 'node:os'
import path from 'node:path'

import {defineConfig} from 'vitest/config'

/**
 * The fast lane (`npm run test:unit`): every test file named `*.unit.test.ts`, the ones that need
 * no database server and no built CLI, in seconds. test/architecture/lanes.unit.test.ts fails when
 * such a file reaches the database or dist/. `npm test` runs these and every other test.
 */
export default defineConfig({
  test: {
    include: ['test/**/*.unit.test.ts'],
    pool: 'forks',
    // One module graph per worker, not one per file: most of a unit file's time is loading modules,
    // and this lane's files share most of theirs. A file that changes process-wide state undoes it
    // (vi.unstubAllEnvs, vi.restoreAllMocks, vi.useRealTimers), so the order does not matter.
    isolate: false,
    env: {AIRFLOW_CONFIG: path.join(os.tmpdir(), 'airlock-tests-no-airflow.cfg')},
  },
})
