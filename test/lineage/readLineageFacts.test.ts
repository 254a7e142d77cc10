import {deflateSync, inflateSync} from 'node:zlib'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {fixtureVersions} from '../../src/worlds/fixtureSchema.js'
import {postgresStore} from '../../src/store/postgres/postgresStore.js'
import {airflowOf} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario} from '../support/scenario.js'

/**
 * readLineageFacts on each Airflow line: the run's data interval, and the task and DAG as the
 * serialized DAG of the try's version declares them (owner, docs, tags, doc_md, description),
 * whether the document is in `data` or zlib `data_compressed`; none without a serialized DAG.
 * The scenario's run 1 has the data interval [2026-11-30, 2026-12-01).
 */
describe.each(fixtureVersions)('readLineageFacts on %s', (line) => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase(line, 2)
  })
  afterAll(async () => db?.drop())

  async function facts(tiId: string) {
    const airflow = await airflowOf(db.knex)
    return postgresStore(airflow.schema.capabilities).readLineageFacts(airflow.db.executor, tiId)
  }

  it('reads the data interval and what the serialized DAG (data) declares of the task and its DAG', async () => {
    const w = await scenario(db.knex)
      .producer('etl', {tasks: ['produce', 'check']})
      .build()
    // What a DAG file with owners, docs and tags serializes to (airflow-core serialization/schema.json).
    await db.knex.raw(
      `update serialized_dag
          set data = jsonb_set(jsonb_set(jsonb_set(data::jsonb,
                       '{dag}', (data::jsonb -> 'dag') || '{"doc_md": "The ETL.", "description": "ETL", "tags": ["nightly", "etl"]}'::jsonb),
                       '{dag,tasks,0,__var,owner}', '"alice, bob"'),
                       '{dag,tasks,0,__var,doc_md}', '"Loads **orders**."')::json
        where dag_id = 'etl'`,
    )
    const read = await facts(w.ti('etl', 'produce').id)
    expect(read).toMatchObject({
      dataIntervalStartMicros: BigInt(Date.UTC(2026, 10, 30)) * 1000n,
      dataIntervalEndMicros: BigInt(Date.UTC(2026, 11, 1)) * 1000n,
      declared: {
        taskOwner: 'alice, bob',
        taskOwners: ['alice, bob', 'airflow'],
        taskDocs: {doc: null, docMd: 'Loads **orders**.', docJson: null, docYaml: null, docRst: null},
        dagDocMd: 'The ETL.',
        dagDescription: 'ETL',
        dagTags: ['nightly', 'etl'],
      },
    })
    // Another task of the same version: the document is read once per version, the task's own fields.
    expect((await facts(w.ti('etl', 'check').id))?.declared).toMatchObject({
      taskOwner: 'airflow',
      taskDocs: {docMd: null},
    })
  })

  it('reads a compressed serialized DAG; a run without a data interval has none', async () => {
    const w = await scenario(db.knex).producer('etl', {serialized: 'compressed'}).build()
    const [row] = await db
      .knex('serialized_dag')
      .where({dag_id: 'etl'})
      .select<Array<{data_compressed: Buffer}>>('data_compressed')
    const document = JSON.parse(inflateSync(row!.data_compressed).toString('utf8')) as Record<string, unknown>
    const changed = {...document, client_defaults: {tasks: {owner: 'data-eng'}}}
    await db
      .knex('serialized_dag')
      .where({dag_id: 'etl'})
      .update({data_compressed: deflateSync(JSON.stringify(changed))})
    await db.knex('dag_run').where({dag_id: 'etl'}).update({data_interval_start: null, data_interval_end: null})
    const read = await facts(w.ti('etl').id)
    expect(read).toMatchObject({
      dataIntervalStartMicros: null,
      dataIntervalEndMicros: null,
      declared: {taskOwner: 'data-eng', taskOwners: ['data-eng'], dagTags: [], dagDocMd: null},
    })
  })

  it('without a serialized DAG for the version: nothing declared', async () => {
    const w = await scenario(db.knex).producer('etl', {serialized: 'none'}).build()
    expect((await facts(w.ti('etl').id))?.declared).toBeNull()
  })
})
