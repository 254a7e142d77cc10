import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {defaultSeed, seedWorld} from '../../src/worlds/seed.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {harness, installedReleases, type Release} from './support/airflow.js'
import {airflowDatabase} from './support/databases.js'

/**
 * The sandbox's demo seed (`seedWorld` with `defaultSeed`, src/worlds/seed.ts) beside the
 * release's own DAG processor. The seed writes its DAGs in SQL, set-based; test/judge/seedDags/
 * seed.py declares the same world as DAG files. Per release: the seed runs on a fixture database
 * of the release's line (what `airlock sandbox seed` does), the release serializes the DAG files
 * (`reserialize`) on a database its own `airflow db migrate` made, and what each wrote is compared
 * DAG by DAG: the serialized DAG's format, timetable and asset condition, its tasks (ids, owners,
 * operator, outlets), the release's own JSON schema and loader on both, the dag rows, the schedule
 * and outlet references, the assets and aliases. Only what is legitimately variable is set
 * aside (ids, hashes, clock values, file locations); `seedOnly` lists the two things the seed
 * writes on purpose that no parse writes.
 */

const seedDags = path.join(path.dirname(fileURLToPath(import.meta.url)), 'seedDags')

/**
 * What the seed's world holds beyond a parse of its DAG files, on purpose, each with its reason.
 * Both are runtime state a parse never writes:
 * 1. the last outlet of etl_001.task_1 is not in asset_active, so the "inactive asset is skipped"
 *    path is always visible (Airflow deactivates an asset whose name or uri another asset took);
 * 2. the alias lake.daily_alias is linked to etl_001.task_1.out_1 (asset_alias_asset), as an
 *    earlier emission through the alias leaves it, so report_001's alias leaf resolves.
 */
const seedOnly = {
  inactive: [`etl_001.task_1.out_${defaultSeed.outlets}`],
  aliasLinks: ['lake.daily_alias -> etl_001.task_1.out_1'],
}

type Json = Record<string, unknown>

interface Side {
  dags: Map<string, Json>
  /** serialized_dag.data of each DAG's latest version. */
  serialized: Map<string, Json>
  versions: string[]
  scheduleReferences: string[]
  outletReferences: string[]
  assets: Json[]
  active: string[]
  aliases: Json[]
  aliasLinks: string[]
}

/** dag columns that are a parse's clock, file or next-run bookkeeping, not the DAG's meaning. */
const variableDagColumns = new Set([
  'fileloc',
  'relative_fileloc',
  'last_parsed_time',
  'last_parse_duration',
  'last_expired',
  'next_dagrun',
  'next_dagrun_data_interval_start',
  'next_dagrun_data_interval_end',
  'next_dagrun_create_after',
  'next_dagrun_partition_key',
  'next_dagrun_partition_date',
])

/** A JSON value with each asset's id left out (asset_expression names assets by id too). */
function withoutIds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutIds)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== 'id')
      .map(([key, inner]) => [key, withoutIds(inner)]),
  )
}

async function readSide(database: TestDatabase): Promise<Side> {
  const {knex} = database
  const {rows: dagRows} = await knex.raw<{rows: Json[]}>('select * from dag order by dag_id')
  const dags = new Map(
    dagRows.map((row) => [
      row.dag_id as string,
      Object.fromEntries(
        Object.entries(row)
          .filter(([column]) => !variableDagColumns.has(column))
          // JSON null and SQL NULL read the same to Airflow's models (None) and to airlock.
          .map(([column, value]) => [column, column === 'asset_expression' ? withoutIds(value) : value]),
      ),
    ]),
  )
  const {rows: serializedRows} = await knex.raw<{rows: Array<{dag_id: string; data: Json; compressed: boolean}>}>(
    `select distinct on (dag_id) dag_id, data, data_compressed is not null as compressed
       from serialized_dag order by dag_id, created_at desc`,
  )
  const {rows: versions} = await knex.raw<{rows: Array<{line: string}>}>(
    `select v.dag_id || ' v' || v.version_number || ' ' || v.bundle_name || ' ' || coalesce(v.bundle_version, '-')
            || ' serialized=' || (select count(*) from serialized_dag s where s.dag_version_id = v.id) as line
       from dag_version v order by 1`,
  )
  const lines = async (sql: string) => (await knex.raw<{rows: Array<{line: string}>}>(sql)).rows.map((row) => row.line)
  return {
    dags,
    serialized: new Map(serializedRows.map((row) => [row.dag_id, row.compressed ? {compressed: true} : row.data])),
    versions: versions.map((row) => row.line),
    scheduleReferences: await lines(
      `select r.dag_id || ' on asset ' || a.name as line from dag_schedule_asset_reference r join asset a on a.id = r.asset_id
       union all select r.dag_id || ' on alias ' || al.name from dag_schedule_asset_alias_reference r join asset_alias al on al.id = r.alias_id
       union all select dag_id || ' on Asset.ref(name=' || name || ')' from dag_schedule_asset_name_reference
       union all select dag_id || ' on Asset.ref(uri=' || uri || ')' from dag_schedule_asset_uri_reference
       order by 1`,
    ),
    outletReferences: await lines(
      `select r.dag_id || '.' || r.task_id || ' -> ' || a.name as line
         from task_outlet_asset_reference r join asset a on a.id = r.asset_id order by 1`,
    ),
    assets: (await knex.raw<{rows: Json[]}>(`select name, uri, "group", extra from asset order by name, uri`)).rows,
    active: await lines(`select name as line from asset_active order by 1`),
    aliases: (await knex.raw<{rows: Json[]}>(`select name, "group" from asset_alias order by name`)).rows,
    aliasLinks: await lines(
      `select al.name || ' -> ' || a.name as line from asset_alias_asset l
         join asset_alias al on al.id = l.alias_id join asset a on a.id = l.asset_id order by 1`,
    ),
  }
}

interface TaskVar {
  task_id: string
  [field: string]: unknown
}

/** What airlock and the scheduler read of a serialized DAG: its format, timetable, tasks and outlets. */
function readParts(data: Json) {
  const dag = data.dag as {timetable?: unknown; timezone?: unknown; tasks?: Array<{__type: string; __var: TaskVar}>}
  return {
    format: data.__version,
    timezone: dag.timezone,
    timetable: dag.timetable,
    tasks: (dag.tasks ?? []).map((task) => ({
      __type: task.__type,
      task_id: task.__var.task_id,
      owner: task.__var.owner,
      task_type: task.__var.task_type,
      _task_module: task.__var._task_module,
      outlets: task.__var.outlets,
    })),
  }
}

/** The release's JSON schema verdict and loaded view of each DAG of the side (harness.py load_serialized). */
async function loaded(release: Release, database: TestDatabase, side: Side): Promise<Json> {
  const file = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-judge-seed-')), 'serialized.json')
  await fs.writeFile(file, JSON.stringify(Object.fromEntries(side.serialized)))
  const [result] = await harness(release, database.url, [{op: 'load_serialized', file}], seedDags)
  return result!
}

const dropped: TestDatabase[] = []
const compared = new Map<string, number>()
afterAll(async () => {
  for (const database of dropped) await database.drop()
  for (const [version, cases] of compared)
    process.stderr.write(`airlock judge lane: Airflow ${version} demo seed: ${cases} comparisons of its DAGs\n`)
})

describe.each(installedReleases())('Airflow $version: the demo seed beside its DAG files', (release) => {
  let airflow: Side
  let airlock: Side
  let airflowLoaded: Json
  let airlockLoaded: Json
  const pass = () => compared.set(release.version, (compared.get(release.version) ?? 0) + 1)

  beforeAll(async () => {
    const parsed = await airflowDatabase(release.version)
    const seeded = await createTestDatabase(release.line, 2)
    dropped.push(parsed, seeded)
    await harness(release, parsed.url, [{op: 'reserialize'}], seedDags)
    await seeded.knex.transaction((trx) => seedWorld(trx, defaultSeed))
    airflow = await readSide(parsed)
    airlock = await readSide(seeded)
    airflowLoaded = await loaded(release, parsed, airflow)
    airlockLoaded = await loaded(release, parsed, airlock)
  })

  it('the same DAGs, each with one version and its serialized DAG, uncompressed', () => {
    expect([...airflow.dags.keys()]).toEqual([
      'etl_001',
      'etl_002',
      'etl_003',
      'report_001',
      'report_002',
      'report_003',
    ])
    expect([...airlock.dags.keys()]).toEqual([...airflow.dags.keys()])
    expect(airlock.versions).toEqual(airflow.versions)
    expect([...airlock.serialized.keys()]).toEqual([...airflow.serialized.keys()])
    pass()
  })

  it.each(['etl_001', 'etl_002', 'etl_003', 'report_001', 'report_002', 'report_003'])(
    '%s: the serialized format, the timetable with its asset condition, each task with its owner, operator and outlets',
    (dagId) => {
      expect(readParts(airlock.serialized.get(dagId)!)).toEqual(readParts(airflow.serialized.get(dagId)!))
      pass()
    },
  )

  it("the release's own JSON schema accepts both, and its loader reads the same DAGs from them", () => {
    // The parse's own output is valid and loads: the judge itself works.
    for (const entry of Object.values(airflowLoaded)) expect(entry).toMatchObject({schema: 'valid', loaded: {}})
    expect(airlockLoaded).toEqual(airflowLoaded)
    pass()
  })

  it('the same dag rows: flags, owners, timetable columns and asset expression', () => {
    expect(Object.fromEntries(airlock.dags)).toEqual(Object.fromEntries(airflow.dags))
    pass()
  })

  it('the same schedule references: by asset, by Asset.ref(name=…) and Asset.ref(uri=…), through the alias', () => {
    expect(airlock.scheduleReferences).toEqual(airflow.scheduleReferences)
    pass()
  })

  it("the same outlet references, assets and aliases, and the seed's two runtime extras", () => {
    expect(airlock.outletReferences).toEqual(airflow.outletReferences)
    expect(airlock.assets).toEqual(airflow.assets)
    expect(airlock.aliases).toEqual(airflow.aliases)
    expect(airlock.active).toEqual(airflow.active.filter((name) => !seedOnly.inactive.includes(name)))
    expect(airflow.aliasLinks).toEqual([])
    expect(airlock.aliasLinks).toEqual(seedOnly.aliasLinks)
    pass()
  })
})
