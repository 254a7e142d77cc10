import {describe, expect, it} from 'vitest'

import {completeEvent} from '../../src/lineage/event.js'
import {openLineageSchemas} from './openLineageSchemas.js'

/** completeEvent without a database: the outputs are the provider's datasets, the facets its shapes, the event valid. */
const {expectValid} = openLineageSchemas()

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
  dataIntervalStartMicros: null,
  dataIntervalEndMicros: null,
  declared: null,
}

describe('completeEvent', () => {
  it('carries the datasets the provider converts, none for a name-only or unknown asset, and validates', () => {
    const event = completeEvent(facts, {namespace: 'default', airlockVersion: '1.2.3'})
    // postgres converts from apache-airflow-providers-postgres 6.7.0; a name-only asset and an
    // unknown scheme give none, as in the worker's event.
    expect(event.outputs).toEqual([
      {namespace: 's3://lake', name: 'orders/2025-03-14'},
      {namespace: 'postgres://db.example.com:5432', name: 'shop.public.orders'},
    ])
    expect(JSON.stringify(event)).not.toContain('"airflow"')
    expectValid(event)
  })

  it('carries nominalTime, documentation, ownership and tags as the worker COMPLETE does, and validates', () => {
    const event = completeEvent(
      {
        ...facts,
        dataIntervalStartMicros: 1_741_910_400_000_000n,
        dataIntervalEndMicros: 1_741_996_800_000_000n,
        declared: {
          taskOwner: 'airflow',
          taskOwners: ['airflow', 'data-eng, alice'],
          taskDocs: {doc: null, docMd: 'Loads **orders**.', docJson: null, docYaml: null, docRst: null},
          dagDocMd: 'The ETL DAG.',
          dagDescription: 'ETL',
          dagTags: ['team:data', 'etl'],
          operatorClass: 'airflow.providers.standard.operators.python.PythonOperator',
          selectiveEnable: null,
          emissionPolicyFlags: null,
        },
      },
      {namespace: 'default', airlockVersion: '1.2.3'},
    )
    expectValid(event)
    const facetOf = (facets: unknown, key: string) => (facets as Record<string, Record<string, unknown>>)[key]
    const run = (event.run as {facets: unknown}).facets
    const job = (event.job as {facets: unknown}).facets
    expect(facetOf(run, 'nominalTime')).toEqual({
      _producer: 'https://github.com/airflow-airlock/airlock',
      _schemaURL: 'https://openlineage.io/spec/facets/1-0-1/NominalTimeRunFacet.json#/$defs/NominalTimeRunFacet',
      nominalStartTime: '2025-03-14T00:00:00+00:00',
      nominalEndTime: '2025-03-15T00:00:00+00:00',
    })
    expect(facetOf(job, 'documentation')).toMatchObject({
      _schemaURL: 'https://openlineage.io/spec/facets/1-1-0/DocumentationJobFacet.json#/$defs/DocumentationJobFacet',
      description: 'Loads **orders**.',
      contentType: 'text/markdown',
    })
    // The task's owner is the default: the DAG's owners ("airflow, data-eng, alice"), split and sorted.
    expect(facetOf(job, 'ownership')).toMatchObject({
      _schemaURL: 'https://openlineage.io/spec/facets/1-0-1/OwnershipJobFacet.json#/$defs/OwnershipJobFacet',
      owners: [{name: 'airflow'}, {name: 'alice'}, {name: 'data-eng'}],
    })
    expect(facetOf(job, 'tags')).toMatchObject({
      _schemaURL: 'https://openlineage.io/spec/facets/1-0-0/TagsJobFacet.json#/$defs/TagsJobFacet',
      tags: [
        {key: 'etl', value: 'etl', source: 'AIRFLOW'},
        {key: 'team:data', value: 'team:data', source: 'AIRFLOW'},
      ],
    })
    // _build_job's order; _build_run puts nominalTime before processing_engine.
    expect(Object.keys(job as object)).toEqual(['documentation', 'ownership', 'tags', 'jobType'])
    expect(Object.keys(run as object)).toEqual(['parent', 'nominalTime', 'processing_engine'])
  })

  it('without a data interval or a serialized DAG: no nominalTime and no job facets but jobType', () => {
    const event = completeEvent(facts, {namespace: 'default', airlockVersion: '1.2.3'})
    expect(Object.keys((event.run as {facets: object}).facets)).toEqual(['parent', 'processing_engine'])
    expect(Object.keys((event.job as {facets: object}).facets)).toEqual(['jobType'])
  })
})
