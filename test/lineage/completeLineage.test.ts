import {mkdtemp, readdir, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {envelope, runCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario} from '../support/scenario.js'
import {openLineageSchemas} from './openLineageSchemas.js'

/**
 * complete's OpenLineage COMPLETE, against a real HTTP server on loopback: one valid event per
 * committed item, with the run id Airflow's provider computes for that try; a backend that is
 * down, slow or failing never fails the completion.
 */
const {expectValid} = openLineageSchemas()

interface Received {
  path: string
  authorization: string | undefined
  body: Record<string, unknown>
}

let db: TestDatabase
let home: string
let server: http.Server
let received: Received[] = []
let respond: (res: http.ServerResponse) => void = (res) => res.writeHead(201).end()
let url = ''

beforeAll(async () => {
  db = await createTestDatabase('3.2', 4)
  // The spool lives under airlock's home: this test's own, never the runner's.
  home = await mkdtemp(path.join(os.tmpdir(), 'airlock-home-'))
  server = http.createServer((req, res) => {
    let text = ''
    req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')))
    req.on('end', () => {
      received.push({path: req.url ?? '', authorization: req.headers.authorization, body: JSON.parse(text)})
      respond(res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve))
  await db?.drop()
  if (home) await rm(home, {recursive: true, force: true})
})

/** etl.produce (try 2, map index 3) runs in a run whose logical_date has microseconds. */
async function world() {
  received = []
  respond = (res) => res.writeHead(201).end()
  const w = await scenario(db.knex)
    .producer('etl', {outlets: 1, mapIndexes: [3], tryNumber: 2})
    .consumer('report', {on: ['etl']})
    .build()
  await db
    .knex('dag_run')
    .where({id: w.run('etl').id})
    .update({logical_date: '2025-03-14T15:09:26.535897Z'})
  return w
}

const complete = (tiId: string, env: Record<string, string>, ...args: string[]) =>
  runCli(['complete', '--database-url', db.url, '--ti-id', tiId, '--yes', '--json', ...args], {
    env: {AIRLOCK_HOME: home, ...env},
  })

/** The run ids the spool holds (events never confirmed). */
const spooled = async () =>
  (await readdir(path.join(home, 'lineage-spool')).catch(() => [])).filter((f) => f.endsWith('.json'))

interface LineageResult {
  items: Array<{outcome: string; lineage: string}>
  lineage: Record<string, number>
  lineage_first_failure?: string
  lineage_spool?: string
}

describe('OpenLineage COMPLETE after complete', () => {
  it('posts exactly one valid COMPLETE with the run id the provider computes for that try', async () => {
    const w = await world()
    const ti = w.ti('etl')
    const result = await complete(ti.id, {OPENLINEAGE_URL: url, OPENLINEAGE_API_KEY: 'secret-key'})
    expect(result.code).toBe(0)
    expect(received).toHaveLength(1)
    const [{path: posted, authorization, body}] = received as [Received]
    expect(posted).toBe('/api/v1/lineage')
    expect(authorization).toBe('Bearer secret-key')
    expectValid(body)
    // openlineage-python's generate_static_uuid(2025-03-14T15:09:26.535897+00:00, "default.etl.produce.2.3").
    expect(body).toMatchObject({
      eventType: 'COMPLETE',
      run: {runId: '01959533-fa87-727d-aefa-0ef9b61646aa'},
      job: {namespace: 'default', name: 'etl.produce', facets: {jobType: {jobType: 'TASK', integration: 'AIRFLOW'}}},
    })
    const run = body.run as {facets: {parent: {job: unknown; run: {runId: string}}; processing_engine: {name: string}}}
    expect(run.facets.parent.job).toEqual({namespace: 'default', name: 'etl'})
    expect(run.facets.processing_engine.name).toBe('airlock')
    // The run's data interval and the task's owner (the serialized default `airflow`: the DAG's owners).
    expect(body.run).toMatchObject({
      facets: {
        nominalTime: {nominalStartTime: '2026-11-30T00:00:00+00:00', nominalEndTime: '2026-12-01T00:00:00+00:00'},
      },
    })
    expect(body.job).toMatchObject({facets: {ownership: {owners: [{name: 'airflow'}]}}})
    // The amazon provider's s3 converter: namespace s3://{bucket}, name the key.
    expect(w.assets('etl')[0]!.uri).toBe('s3://lake/etl/produce/out_1')
    expect(body.outputs).toEqual([{namespace: 's3://lake', name: 'etl/produce/out_1'}])
    // The item was handed to the outbox (it never waits on the backend); the summary says it was confirmed.
    const report = (envelope(result) as {result: LineageResult}).result
    expect(report.items[0]!.lineage).toBe('queued')
    expect(report.lineage).toEqual({sent: 1, maybe_delivered: 0, failed: 0, not_tried: 0})
    expect(report.lineage_spool).toBeUndefined()
    expect(await spooled()).toEqual([])
    expect(result.stdout + result.stderr).not.toContain('secret-key')
  })

  it('a backend that refuses connections leaves the completion committed, its event failed and kept in the spool, exit 0 (5 with --lineage-required)', async () => {
    const w = await world()
    const closed = http.createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const result = await complete(w.ti('etl').id, {OPENLINEAGE_URL: `http://127.0.0.1:${port}`})
    expect(result.code).toBe(0)
    const {result: report} = envelope(result) as {result: LineageResult}
    expect(report.items[0]).toMatchObject({outcome: 'completed', lineage: 'queued'})
    expect(report.lineage).toEqual({sent: 0, maybe_delivered: 0, failed: 1, not_tried: 0})
    expect(report.lineage_first_failure).toMatch(/^etl\/.*\/produce\[3\]: failed: ECONNREFUSED after 3 attempts$/)
    expect(report.lineage_spool).toBe(path.join(home, 'lineage-spool'))
    expect(await spooled()).toHaveLength(1)
    expect(
      (
        await db
          .knex('task_instance')
          .where({id: w.ti('etl').id})
          .first()
      ).state,
    ).toBe('success')

    // For cron: the same, required, is exit 5, the completion still committed.
    const again = await world()
    const required = await complete(
      again.ti('etl').id,
      {OPENLINEAGE_URL: `http://127.0.0.1:${port}`},
      '--lineage-required',
    )
    expect(required.code).toBe(5)
    expect(JSON.stringify(envelope(required).warnings)).toContain(
      '--lineage-required: 1 OpenLineage COMPLETE event was not confirmed',
    )
  })

  it('a backend answering 503 is retried, then reported; a 400 is not retried', async () => {
    const w = await world()
    respond = (res) => res.writeHead(503).end()
    const failing = await complete(w.ti('etl').id, {OPENLINEAGE_URL: url})
    expect(failing.code).toBe(0)
    expect(received).toHaveLength(3)
    expect((envelope(failing) as {result: LineageResult}).result.lineage_first_failure).toMatch(
      /: failed: HTTP 503 after 3 attempts$/,
    )

    const again = await world()
    respond = (res) => res.writeHead(400).end()
    const refused = await complete(again.ti('etl').id, {OPENLINEAGE_URL: url})
    expect(received).toHaveLength(1)
    expect((envelope(refused) as {result: LineageResult}).result.lineage_first_failure).toMatch(/: failed: HTTP 400$/)
  })

  it('a dry run sends nothing and shows the event it would send; --no-lineage sends nothing', async () => {
    const w = await world()
    const dry = await complete(w.ti('etl').id, {OPENLINEAGE_URL: url}, '--dry-run')
    expect(dry.code).toBe(0)
    expect(received).toEqual([])
    const item = (envelope(dry) as {result: {items: Array<{lineage: string; lineage_event: Record<string, unknown>}>}})
      .result.items[0]!
    expect(item.lineage).toBe('would_send')
    expectValid(item.lineage_event)
    expect(item.lineage_event).toMatchObject({run: {runId: '01959533-fa87-727d-aefa-0ef9b61646aa'}})

    const off = await complete(w.ti('etl').id, {OPENLINEAGE_URL: url}, '--no-lineage')
    expect(off.code).toBe(0)
    expect(received).toEqual([])
    expect((envelope(off) as {result: {items: Array<{lineage: string}>}}).result.items[0]!.lineage).toBe('disabled')
  })

  it('OPENLINEAGE_DISABLED=true wins over OPENLINEAGE_URL; a malformed URL is exit 2 before anything is written', async () => {
    const w = await world()
    const disabled = await complete(w.ti('etl').id, {OPENLINEAGE_URL: url, OPENLINEAGE_DISABLED: 'true'})
    expect(disabled.code).toBe(0)
    expect(received).toEqual([])
    const other = await world()
    const bad = await complete(other.ti('etl').id, {}, '--openlineage-url', 'ftp://nowhere')
    expect(bad.code).toBe(2)
    expect(
      (
        await db
          .knex('task_instance')
          .where({id: other.ti('etl').id})
          .first()
      ).state,
    ).toBe('running')
  })

  it("replay-events sends no COMPLETE for a replayed try (its worker's listener did), unless --lineage-for-replays", async () => {
    received = []
    const replay = async (...args: string[]) => {
      const w = await scenario(db.knex)
        .producer('etl', {outlets: 1, state: 'success', emitted: true, workerLog: true})
        .build()
      await db.knex('asset_event').where({source_dag_id: 'etl'}).delete()
      return runCli(
        ['replay-events', '--database-url', db.url, '--ti-id', w.ti('etl').id, '--yes', '--json', ...args],
        {
          env: {OPENLINEAGE_URL: url, AIRLOCK_HOME: home},
        },
      )
    }
    const quiet = await replay()
    expect(quiet.code).toBe(0)
    expect(received).toEqual([])
    expect(JSON.stringify(envelope(quiet).warnings)).toContain('--lineage-for-replays')

    const result = await replay('--lineage-for-replays')
    expect(result.code).toBe(0)
    expect(received).toHaveLength(1)
    expectValid(received[0]!.body)
    expect(received[0]!.body).toMatchObject({eventType: 'COMPLETE', job: {name: 'etl.produce'}})
    expect(received[0]!.body.outputs).toHaveLength(1)
    const report = (envelope(result) as {result: LineageResult}).result
    expect(report.items[0]).toMatchObject({outcome: 'replayed', lineage: 'queued'})
    expect(report.lineage).toMatchObject({sent: 1})
  })

  it('OPENLINEAGE_CONFIG: the http transport of an openlineage.yml, its api_key as the Bearer token; another transport is off, said why', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'airlock-ol-'))
    try {
      const file = path.join(dir, 'openlineage.yml')
      await writeFile(
        file,
        `transport:\n  type: http\n  url: ${url}\n  endpoint: api/v1/lineage\n  auth:\n    type: api_key\n    apiKey: from-yaml\n`,
      )
      const w = await world()
      const sent = await complete(w.ti('etl').id, {OPENLINEAGE_CONFIG: file})
      expect(sent.code).toBe(0)
      expect(received.map((r) => [r.path, r.authorization])).toEqual([['/api/v1/lineage', 'Bearer from-yaml']])

      await writeFile(file, 'transport:\n  type: kafka\n  topic: lineage\n')
      const other = await world()
      const off = await complete(other.ti('etl').id, {OPENLINEAGE_CONFIG: file, OPENLINEAGE_URL: url})
      expect(off.code).toBe(0)
      expect(received).toEqual([])
      expect((envelope(off) as {result: {items: Array<{lineage: string}>}}).result.items[0]!.lineage).toBe('disabled')
      // Under --json the warning is in the envelope, stderr stays the log's.
      expect(JSON.stringify(envelope(off).warnings)).toContain('transport type \\"kafka\\" is not sent by airlock')
    } finally {
      await rm(dir, {recursive: true, force: true})
    }
  })
})
