import fs from 'node:fs'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {releases as knownReleases, revisions} from '../../src/airflow/revisions.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {describeTable, publicTables} from '../support/catalog.js'
import {harness, installedReleases} from './support/airflow.js'
import {airflowDatabase, upgradedDatabase} from './support/databases.js'

/**
 * The fixture schemas (migrations/) against the schema each release's own `airflow db migrate`
 * creates, and the revision graph (src/airflow/revisions.json) against the release's migration
 * files and _REVISION_HEADS_MAP. The fixture holds only the tables airlock reads or writes.
 */
const oldest = installedReleases()[0]?.version ?? ''

/**
 * Changes a release's migrations make after the head its line's fixture is stamped with, per
 * release: each difference (as the comparison below words it) and the migration file making it.
 * The '3.1' fixture is stamped with 3.1.0's head cc92b33c6709 (shared by 3.1.0–3.1.7); 3.1.8 adds
 * two migrations after it, which the '3.2' fixture applies. 3.2.2 and 3.3.2 add none after their
 * line's head.
 */
const afterFixtureHead: Record<string, Array<{difference: string; migration: string}>> = {
  '3.1.8': [
    {
      difference:
        'task_reschedule: Airflow only: index CREATE INDEX idx_task_reschedule_ti_id_id_desc ON public.task_reschedule USING btree (ti_id, id DESC)',
      migration: '0086_3_1_8_add_index_to_task_reschedule_ti_id.py',
    },
    {
      difference: 'dag_bundle: Airflow only: column signed_url_template text null default -',
      migration: '0087_3_1_8_change_signed_url_template_from_varchar_.py',
    },
    {
      difference: 'dag_bundle: fixture only: column signed_url_template character varying(200) null default -',
      migration: '0087_3_1_8_change_signed_url_template_from_varchar_.py',
    },
  ],
}

/** A table's lines without column positions, sorted: what a fresh install and an upgrade can share. */
const unordered = (lines: string[]) => lines.map((line) => line.replace(/ #\d+ /, ' ')).sort()

describe.each(installedReleases())('Airflow $version: schema and heads', (release) => {
  let airflow: TestDatabase
  let upgraded: TestDatabase
  let fixture: TestDatabase

  beforeAll(async () => {
    airflow = await airflowDatabase(release.version)
    upgraded = await upgradedDatabase(release.version, oldest)
    fixture = await createTestDatabase(release.line)
  })
  afterAll(async () => {
    await airflow?.drop()
    await upgraded?.drop()
    await fixture?.drop()
  })

  const fixtureTables = async () =>
    (await publicTables(fixture.knex)).filter((table) => !table.startsWith('knex_migrations'))

  it(`upgraded from ${oldest} by its own migrations: every fixture table the same column by column, key by key, index by index`, async () => {
    const real = new Set(await publicTables(upgraded.knex))
    const tables = await fixtureTables()
    expect(tables.filter((table) => !real.has(table))).toEqual([])
    // Column positions aside (airlock names every column it reads or writes), nothing may differ.
    const differences: string[] = []
    for (const table of tables) {
      const expected = unordered(await describeTable(upgraded.knex, table))
      const actual = unordered(await describeTable(fixture.knex, table))
      differences.push(
        ...expected.filter((line) => !actual.includes(line)).map((line) => `${table}: Airflow only: ${line}`),
        ...actual.filter((line) => !expected.includes(line)).map((line) => `${table}: fixture only: ${line}`),
      )
    }
    const allowed = (afterFixtureHead[release.version] ?? []).map(({difference}) => difference)
    expect(differences.sort()).toEqual([...allowed].sort())
  })

  it('installed fresh (its models, not its migrations): the same fixture tables as upgraded, column order aside', async () => {
    const drift: string[] = []
    for (const table of await fixtureTables()) {
      const fresh = unordered(await describeTable(airflow.knex, table))
      const upgrade = unordered(await describeTable(upgraded.knex, table))
      drift.push(
        ...fresh.filter((line) => !upgrade.includes(line)).map((line) => `${table}: fresh only: ${line}`),
        ...upgrade.filter((line) => !fresh.includes(line)).map((line) => `${table}: upgrade only: ${line}`),
      )
    }
    expect(drift).toEqual([])
  })

  it("stamps the head airlock places this release at, and _REVISION_HEADS_MAP agrees with airlock's releases", async () => {
    const {rows} = await airflow.knex.raw<{rows: Array<{version_num: string}>}>(
      'select version_num from alembic_version',
    )
    const placed = knownReleases.find((known) => known.version === release.version)
    expect(rows.map((row) => row.version_num)).toEqual([placed?.head])
    const [{heads}] = (await harness(release, airflow.url, [{op: 'version'}])) as [{heads: Record<string, string>}]
    for (const [version, head] of Object.entries(heads).filter(([version]) => version.startsWith('3.'))) {
      expect({version, head}).toEqual({version, head: knownReleases.find((known) => known.version === version)?.head})
    }
  })

  it("holds airlock's revision graph from 3.0.0's head to the release's head, migration file by migration file", () => {
    const folder = path.join(release.venv, 'lib/python3.11/site-packages/airflow/migrations/versions')
    const graph = new Map<string, string | null>()
    for (const file of fs.readdirSync(folder).filter((name) => name.endsWith('.py'))) {
      const text = fs.readFileSync(path.join(folder, file), 'utf8')
      // Not every id is hex: 3.2.0 has "1b2c3d4e5f6g".
      const revision = /^revision\s*=\s*["']([0-9a-z]+)["']/m.exec(text)?.[1]
      const down = /^down_revision\s*=\s*["']([0-9a-z]+)["']/m.exec(text)?.[1] ?? null
      if (revision) graph.set(revision, down)
    }
    const head = knownReleases.find((known) => known.version === release.version)!.head
    const chain: Array<{revision: string; downRevision: string | null}> = []
    for (let at: string | null | undefined = head; at && at !== '29ce7909c52b'; at = graph.get(at)) {
      chain.push({revision: at, downRevision: graph.get(at) ?? null})
    }
    const ours = chain.map(({revision}) => revisions.find((known) => known.revision === revision))
    expect(chain.map(({revision, downRevision}, i) => ({revision, downRevision, ours: ours[i]?.downRevision}))).toEqual(
      chain.map(({revision, downRevision}) => ({revision, downRevision, ours: downRevision})),
    )
  })
})
