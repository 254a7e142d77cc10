import {mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {lineageSettings} from '../../src/lineage/settings.js'
import {usageMessage} from '../support/usage.js'

/** Where a run's spool is and how long it waits: the command's flags give these. */
const delivery = {spoolDir: path.join(os.tmpdir(), 'airlock-test-spool'), waitMs: 30_000, required: false}

/** Where COMPLETE events go, read as the provider reads it; every bad input is exit 2, never a bug. */
const none = {AIRFLOW_CONFIG: '/nonexistent/airflow.cfg'}

describe('lineageSettings', () => {
  it('OPENLINEAGE_URL with its endpoint and key; the namespace in the provider order', async () => {
    expect(
      await lineageSettings(
        {lineage: true, delivery},
        {...none, OPENLINEAGE_URL: 'http://ol:5000', OPENLINEAGE_API_KEY: 'k', AIRFLOW__OPENLINEAGE__NAMESPACE: 'prod'},
        os.tmpdir(),
      ),
    ).toMatchObject({
      enabled: true,
      url: 'http://ol:5000/api/v1/lineage',
      apiKey: 'k',
      namespace: 'prod',
      source: 'OPENLINEAGE_URL',
      delivery: {policy: {timeoutMs: 5000, attempts: 3, backoffMs: 200}},
    })
  })

  it("the transport's timeout and retry, as the client names them; the environment wins over the file", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'airlock-ol-'))
    const file = path.join(dir, 'openlineage.yml')
    await writeFile(
      file,
      'transport:\n  type: http\n  url: http://ol:5000\n  timeout: 1.5\n  retry:\n    total: 4\n    backoff_factor: 0.5\n',
    )
    const fromFile = await lineageSettings({lineage: true, delivery}, {...none, OPENLINEAGE_CONFIG: file}, dir)
    expect(fromFile).toMatchObject({delivery: {policy: {timeoutMs: 1500, attempts: 5, backoffMs: 500}}})
    const overridden = await lineageSettings(
      {lineage: true, delivery},
      {
        ...none,
        OPENLINEAGE_CONFIG: file,
        OPENLINEAGE__TRANSPORT__TIMEOUT: '10',
        OPENLINEAGE__TRANSPORT__RETRY: '{"total": 0}',
      },
      dir,
    )
    expect(overridden).toMatchObject({delivery: {policy: {timeoutMs: 10_000, attempts: 1, backoffMs: 500}}})
    const byKey = await lineageSettings(
      {lineage: true, delivery},
      {...none, OPENLINEAGE_URL: 'http://ol:5000', OPENLINEAGE__TRANSPORT__RETRY__TOTAL: '1'},
      dir,
    )
    expect(byKey).toMatchObject({delivery: {policy: {attempts: 2}}})
    for (const bad of [
      {OPENLINEAGE__TRANSPORT__TIMEOUT: 'soon'},
      {OPENLINEAGE__TRANSPORT__TIMEOUT: '-1'},
      {OPENLINEAGE__TRANSPORT__RETRY: '{total: 3'},
      {OPENLINEAGE__TRANSPORT__RETRY__TOTAL: '2.5'},
    ]) {
      const message = await lineageSettings(
        {lineage: true, delivery},
        {...none, OPENLINEAGE_URL: 'http://ol:5000', ...bad},
        dir,
      ).then(
        () => 'accepted',
        (error: unknown) =>
          usageMessage(() => {
            throw error
          }),
      )
      expect(message, JSON.stringify(bad)).toMatch(/OPENLINEAGE__TRANSPORT__RETRY|OpenLineage: the transport/)
    }
  })

  it('an airflow.cfg that cannot be read is exit 2, as Airflow would refuse it', async () => {
    // A directory where the file should be: reading it fails with EISDIR.
    const message = await lineageSettings({lineage: true, delivery}, {AIRFLOW_CONFIG: os.tmpdir()}, os.tmpdir()).then(
      () => '',
      (error: unknown) =>
        usageMessage(() => {
          throw error
        }),
    )
    expect(message).toContain("Airflow's configuration:")
  })
})
