import os from 'node:os'
import path from 'node:path'

import {defineConfig} from 'vitest/config'

/**
 * The fast lane (`npm run test:unit`): the tests that need no database server and no built CLI,
 * in seconds. `npm test` runs these and every other test.
 */
export const unitTests = [
  'test/airflow/config.test.ts',
  'test/architecture/**/*.test.ts',
  'test/audit/lockForest.test.ts',
  'test/batch/tally.test.ts',
  'test/bench/cpuTime.test.ts',
  'test/bench/growth.test.ts',
  'test/cli/batchOutput.test.ts',
  'test/cli/commandNotFound.test.ts',
  'test/cli/helpText.test.ts',
  'test/cli/interrupt.test.ts',
  'test/cli/outputName.test.ts',
  'test/cli/parseInput.test.ts',
  'test/cli/promptColor.test.ts',
  'test/cli/renderTables.test.ts',
  'test/cli/wrapPlainText.test.ts',
  'test/connection/configFile.test.ts',
  'test/connection/resolve.test.ts',
  'test/connection/url.test.ts',
  'test/report/itemJson.test.ts',
  'test/docs/readmeInstall.test.ts',
  'test/docs/commandPages.test.ts',
  'test/docs/storeMethods.test.ts',
  'test/docs/supportedVersions.test.ts',
  'test/docs/windowFlags.test.ts',
  'test/engine/statementLog.test.ts',
  'test/lineage/datasets.test.ts',
  'test/lineage/event.test.ts',
  'test/lineage/facets.test.ts',
  'test/lineage/providerFilters.test.ts',
  'test/lineage/settings.test.ts',
  'test/lineage/staticUuid.test.ts',
  'test/output/**/*.test.ts',
  'test/protocol/auditExtra.test.ts',
  'test/protocol/downstream.test.ts',
  'test/protocol/sessionTag.test.ts',
  'test/replay/checkpoint.test.ts',
  'test/selection/findingsFile.test.ts',
  'test/selection/inputFile.test.ts',
  'test/selection/pages.test.ts',
  'test/store/sqlShape.test.ts',
  'test/store/statementFiles.test.ts',
]

export default defineConfig({
  test: {
    include: unitTests,
    pool: 'forks',
    env: {AIRFLOW_CONFIG: path.join(os.tmpdir(), 'airlock-tests-no-airflow.cfg')},
  },
})
