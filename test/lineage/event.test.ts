import {readFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {Ajv2020} from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import {describe, expect, it} from 'vitest'

import {completeEvent} from '../../src/lineage/event.js'

/** completeEvent without a database: the outputs are the provider's datasets, the event valid. */
const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'openlineage')
const ajv = new Ajv2020({strict: false})
addFormats.default(ajv)
for (const file of ['OpenLineage.json', 'ParentRunFacet.json', 'JobTypeJobFacet.json', 'ProcessingEngineRunFacet.json'])
  ajv.addSchema(JSON.parse(readFileSync(path.join(fixtures, file), 'utf8')) as object)
const validateRunEvent = ajv.compile({$ref: 'https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent'})

const facts = {
  dagId: 'etl',
  taskId: 'load',
  mapIndex: -1,
  tryNumber: 1,
  endDate: {epochMicros: 1_741_964_966_535_897n},
  runInstant: {epochMicros: 1_741_910_400_000_000n},
  clearNumber: 0,
  confOpenLineage: null,
  outputs: [
    {name: 'raw orders', uri: 's3://lake/orders/2025-03-14'},
    {name: 'daily_orders', uri: 'daily_orders'},
    {name: 'orders table', uri: 'postgres://db.example.com:5432/shop/public/orders'},
    {name: 'somewhere', uri: 'custom://host/thing'},
  ],
}

describe('completeEvent', () => {
  it('carries the datasets the provider converts, none for a name-only or unknown asset, and validates', () => {
    const event = completeEvent(facts, {namespace: 'default', airlockVersion: '1.2.3'})
    // postgres has no converter in apache/airflow's provider: no dataset, as the worker's event.
    expect(event.outputs).toEqual([{namespace: 's3://lake', name: 'orders/2025-03-14'}])
    expect(JSON.stringify(event)).not.toContain('"airflow"')
    expect(validateRunEvent(event), JSON.stringify(validateRunEvent.errors)).toBe(true)
    const run = event.run as {facets: Record<string, {_schemaURL: string}>}
    const job = event.job as {facets: Record<string, {_schemaURL: string}>}
    for (const facet of [...Object.values(run.facets), ...Object.values(job.facets)]) {
      const check = ajv.getSchema(facet._schemaURL)!
      expect(check(facet), `${facet._schemaURL}: ${JSON.stringify(check.errors)}`).toBe(true)
    }
  })
})
