import os from 'node:os'

import {describe, expect, it} from 'vitest'

import {lineageSettings} from '../../src/lineage/settings.js'
import {usageMessage} from '../support/usage.js'

/** Where COMPLETE events go, read as the provider reads it; every bad input is exit 2, never a bug. */
const none = {AIRFLOW_CONFIG: '/nonexistent/airflow.cfg'}

describe('lineageSettings', () => {
  it('OPENLINEAGE_URL with its endpoint and key; the namespace in the provider order', async () => {
    expect(
      await lineageSettings(
        {lineage: true},
        {...none, OPENLINEAGE_URL: 'http://ol:5000', OPENLINEAGE_API_KEY: 'k', AIRFLOW__OPENLINEAGE__NAMESPACE: 'prod'},
        os.tmpdir(),
      ),
    ).toEqual({
      enabled: true,
      url: 'http://ol:5000/api/v1/lineage',
      apiKey: 'k',
      namespace: 'prod',
      source: 'OPENLINEAGE_URL',
    })
  })

  it('an airflow.cfg that cannot be read is exit 2, as Airflow would refuse it', async () => {
    // A directory where the file should be: reading it fails with EISDIR.
    const message = await lineageSettings({lineage: true}, {AIRFLOW_CONFIG: os.tmpdir()}, os.tmpdir()).then(
      () => '',
      (error: unknown) =>
        usageMessage(() => {
          throw error
        }),
    )
    expect(message).toContain("Airflow's configuration:")
  })
})
