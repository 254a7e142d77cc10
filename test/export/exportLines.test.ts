import {PassThrough} from 'node:stream'

import type {Knex} from 'knex'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {exportEvents, exportPageSize} from '../../src/export/exportEvents.js'
import {airflowOf} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario} from '../support/scenario.js'

/**
 * export-events writes every line byte for byte as it always has: JSON.stringify of the event
 * read as rows (extra parsed by node-postgres, the timestamp a Date), although PostgreSQL now
 * builds each line itself. The reference below is that earlier export, kept here as the spec. The
 * world holds what tells the two apart if they ever differ: quotes, backslashes, control
 * characters and non-ASCII in names, Python-spaced extras with integer keys, duplicate keys,
 * escapes and number forms, microsecond timestamps, a year before 1000, several aliases, queue
 * rows, consuming runs out of order, and an event with no source.
 */
const trickyName = 'q"uote \\back\nnew\ttab\u0001ctl\u001f é ✓ 😀 </script>\u2028'
const extras = [
  '{}',
  '{"a": 1}',
  '{"b": 1.0, "2": "x", "1": [1e2, -0, 12345678901234567890], "a": {"10": 1, "9": 2}}',
  '{"s": "\\u00e9\\/ \\ud83d\\ude00 \\u0007"}',
  '{"dup": 1, "dup": 2}',
  '"only a string"',
  'null',
  '[1, {"z": true}, []]',
  '{\n  "pretty": 1,\n\t"tab": "\\t"\n}',
  '{"big": 1.5e300, "small": 1e-7, "neg": -0.0}',
]
const timestamps = [
  '2026-01-02 03:04:05.291999+00',
  '2026-01-02 03:04:05.000001+00',
  '2026-01-02 03:04:05.999999+00',
  '2026-06-01 12:00:00+02',
  '0999-12-31 23:59:59.5+00',
]

for (const version of ['3.0', '3.4'] as const) {
  describe(`export-events lines, Airflow ${version} schema`, () => {
    let db: TestDatabase
    beforeAll(async () => {
      db = await createTestDatabase(version, 2)
      const world = await scenario(db.knex)
        .producer('etl', {outlets: 2, runs: 3})
        .consumer('downstream', {on: ['etl.produce.out_1', 'etl.produce.out_2']})
        .build()
      expect(world.asset('etl.produce.out_1').id).toBeGreaterThan(0)
      await plantTrickyEvents(db.knex, version)
    })
    afterAll(async () => db?.drop())

    it('writes each line exactly as JSON.stringify of the event read as rows', async () => {
      const airflow = await airflowOf(db.knex)
      const expected = await referenceExport(db.knex, airflow.schema.capabilities)
      const actual = await exportText(db, {assets: []})
      expect(actual.split('\n').length - 1).toBe(expected.split('\n').length - 1)
      expect(actual.split('\n')).toEqual(expected.split('\n'))
      // The world did plant what the comparison is about.
      expect(expected).toContain('\\u0001ctl')
      expect(expected).toContain('"aliases":["alias a","alias b"]')
      expect(expected).toContain('"queued_for":["downstream"]')
      expect(expected).toContain('"timestamp":"0999-12-31T23:59:59.500Z"')
      expect(expected).toMatch(/"consumed_by":\[\{"dag_id":"etl","run_id":"[^"]+"\},\{"dag_id":"etl"/)
      if (version === '3.4') expect(expected).toContain(`"partition_key":${JSON.stringify(trickyName)}`)
    })

    it('writes the same lines across keyset pages, and under a filter', async () => {
      await db.knex.raw(
        `insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp")
         select (select min(id) from asset), json_build_object('n', n), 'etl', 'r', 'produce', -1, now() + make_interval(secs => n)
           from generate_series(1, ?) n`,
        [exportPageSize + 7],
      )
      const airflow = await airflowOf(db.knex)
      const expected = await referenceExport(db.knex, airflow.schema.capabilities)
      const actual = await exportText(db, {assets: []})
      expect(actual.split('\n').length - 1).toBeGreaterThan(exportPageSize)
      expect(actual).toBe(expected)
      const filtered = await exportText(db, {assets: ['etl.produce.out_2']})
      expect(filtered.split('\n').filter(Boolean)).toEqual(
        expected.split('\n').filter((line) => line.includes('"name":"etl.produce.out_2"')),
      )
    })
  })
}

async function exportText(db: TestDatabase, filter: {assets: string[]}): Promise<string> {
  const airflow = await airflowOf(db.knex)
  const out = new PassThrough()
  const chunks: Buffer[] = []
  out.on('data', (chunk: Buffer) => chunks.push(chunk))
  await exportEvents(airflow, filter, out)
  out.end()
  return Buffer.concat(chunks).toString('utf8')
}

async function plantTrickyEvents(knex: Knex, version: string): Promise<void> {
  const [{id: assetId}] = (await knex('asset')
    .insert({
      name: trickyName,
      uri: `s3://${trickyName}`,
      group: 'asset',
      extra: '{}',
      created_at: knex.fn.now(),
      updated_at: knex.fn.now(),
    })
    .returning('id')) as [{id: number}]
  const runs = (await knex('dag_run').select('id').orderBy('id')) as Array<{id: number}>
  const [aliasA, aliasB] = await knex('asset_alias')
    .insert([
      {name: 'alias b', group: 'asset'},
      {name: 'alias a', group: 'asset'},
    ])
    .returning<Array<{id: number}>>('id')
  for (const [i, extra] of extras.entries()) {
    const [event] = await knex('asset_event')
      .insert({
        asset_id: assetId,
        extra: knex.raw('?::json', [extra]),
        // Every fifth event external: no source at all.
        source_dag_id: i % 5 === 4 ? null : 'etl',
        source_run_id: i % 5 === 4 ? null : trickyName,
        source_task_id: i % 5 === 4 ? null : 'produce',
        source_map_index: i % 5 === 4 ? null : i - 1,
        timestamp: knex.raw('?::timestamptz', [timestamps[i % timestamps.length]!]),
        ...(version === '3.4' ? {partition_key: i === 1 ? trickyName : null} : {}),
      })
      .returning<Array<{id: number}>>('id')
    if (i === 1) {
      await knex('asset_alias_asset_event').insert([
        {alias_id: aliasA!.id, event_id: event!.id},
        {alias_id: aliasB!.id, event_id: event!.id},
      ])
      // Consumed by two runs, linked newest first: the line lists them by run id.
      await knex('dagrun_asset_event').insert([
        {dag_run_id: runs.at(-1)!.id, event_id: event!.id},
        {dag_run_id: runs[0]!.id, event_id: event!.id},
      ])
    }
    if (version === '3.4' ? i === 2 : i === 0)
      await knex('asset_dag_run_queue').insert({
        asset_id: assetId,
        target_dag_id: 'downstream',
        created_at: knex.fn.now(),
        ...(version === '3.4' ? {asset_event_id: event!.id} : {}),
      })
  }
}

/** The export as it was written before PostgreSQL built the lines: rows read, then JSON.stringify. */
async function referenceExport(
  knex: Knex,
  capabilities: {eventPartitionKey: boolean; queueShape: 'per_asset' | 'per_event'},
): Promise<string> {
  const queued = capabilities.queueShape === 'per_event' ? 'q.asset_event_id = e.id' : 'q.asset_id = e.asset_id'
  const {rows} = await knex.raw<{rows: Array<Record<string, never>>}>(
    `select e.id, a.name as asset_name, a.uri as asset_uri, e.extra, e.source_dag_id, e.source_run_id, e.source_task_id, e.source_map_index,
            ${capabilities.eventPartitionKey ? 'e.partition_key' : 'null::varchar as partition_key'}, e."timestamp",
            coalesce((select array_agg(al.name order by al.name) from asset_alias_asset_event l join asset_alias al on al.id = l.alias_id where l.event_id = e.id), '{}') as aliases,
            coalesce((select array_agg(distinct q.target_dag_id order by q.target_dag_id) from asset_dag_run_queue q where ${queued}), '{}') as queued_for,
            coalesce((select json_agg(json_build_object('dag_id', dr.dag_id, 'run_id', dr.run_id) order by dr.id)
                        from dagrun_asset_event c join dag_run dr on dr.id = c.dag_run_id where c.event_id = e.id), '[]') as consumed_by
       from asset_event e join asset a on a.id = e.asset_id order by e.id`,
  )
  return rows
    .map((row: Record<string, unknown>) =>
      JSON.stringify({
        id: row.id,
        asset: {name: row.asset_name, uri: row.asset_uri},
        extra: row.extra,
        source_dag_id: row.source_dag_id,
        source_run_id: row.source_run_id,
        source_task_id: row.source_task_id,
        source_map_index: row.source_map_index,
        partition_key: row.partition_key,
        timestamp: (row.timestamp as Date).toISOString(),
        aliases: row.aliases,
        queued_for: row.queued_for,
        consumed_by: row.consumed_by,
      }),
    )
    .map((line) => line + '\n')
    .join('')
}
