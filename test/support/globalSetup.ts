import {spawnSync} from 'node:child_process'
import {randomBytes} from 'node:crypto'

import knexFactory from 'knex'
import type {TestProject} from 'vitest/node'

import {buildFixtureSchema, fixtureVersions} from '../../src/worlds/fixtureSchema.js'
import {startTestServer, type TestServer} from './testServer.js'
import {templateName, withDatabase} from './urls.js'

declare module 'vitest' {
  export interface ProvidedContext {
    adminUrl: string
    runId: string
    serverKind: string
  }
}

let server: TestServer | undefined
let runId = ''

/** One server per run; one template database per fixture version, cloned by each test file. */
export async function setup(project: TestProject): Promise<void> {
  const python = spawnSync('python3', ['--version'], {encoding: 'utf8'})
  process.stderr.write(
    `airlock tests: the judge lane (Airflow's own releases beside airlock) is not in this run: ` +
      (python.status === 0
        ? `npm run test:airflow runs it (${python.stdout.trim()} found)\n`
        : 'skipped, it needs Python 3.11 and none was found (npm run test:airflow skips it too)\n'),
  )
  const started = await startSuiteServer()
  project.provide('adminUrl', started.adminUrl)
  project.provide('runId', started.runId)
  project.provide('serverKind', started.kind)
}

/** The server and its fixture templates; the judge lane's setup adds Airflow's own databases. */
export async function startSuiteServer(): Promise<{adminUrl: string; runId: string; kind: string}> {
  server = await startTestServer()
  runId = randomBytes(4).toString('hex')
  const admin = knexFactory({client: 'pg', connection: server.adminUrl, pool: {min: 0, max: 1}})
  try {
    for (const version of fixtureVersions) {
      const name = templateName(runId, version)
      await admin.raw('create database ??', [name])
      const knex = knexFactory({client: 'pg', connection: withDatabase(server.adminUrl, name), pool: {min: 0, max: 1}})
      try {
        await buildFixtureSchema(knex, version)
      } finally {
        await knex.destroy()
      }
    }
  } finally {
    await admin.destroy()
  }

  process.stderr.write(`airlock tests: PostgreSQL from ${server.kind} (run ${runId})\n`)
  return {adminUrl: server.adminUrl, runId, kind: server.kind}
}

export async function teardown(): Promise<void> {
  if (!server) return
  const admin = knexFactory({client: 'pg', connection: server.adminUrl, pool: {min: 0, max: 1}})
  try {
    const {rows} = await admin.raw<{rows: Array<{datname: string}>}>(
      'select datname from pg_database where datname like ?',
      [`airlock_t${runId}%`],
    )
    for (const row of rows) await admin.raw('drop database if exists ?? with (force)', [row.datname])
  } finally {
    await admin.destroy()
    await server.stop()
  }
}
