import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {compareVersions} from '../../src/airflow/revisions.js'
import {fixtureVersions, type FixtureVersion} from '../../src/worlds/fixtureSchema.js'
import {envelope, runCli} from '../support/cli.js'
import {createReadOnlyRole} from '../support/roles.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {dumpAvailable, restoreDump} from '../support/restoreDump.js'
import {scenario} from '../support/scenario.js'

// Each fixture is stamped with its line's head; the label names every release sharing it.
const expectedVersion = {
  '3.0': '3.0.0–3.0.2',
  '3.1': '3.1.0–3.1.7',
  '3.2': '3.2.0–3.2.2',
  '3.3': '3.3.0–3.3.2',
  '3.4': '3.4.0 development (main at dd3e57b)',
} as const

interface DoctorJson {
  status: number
  result: {
    airflow: {
      supported: boolean
      version: string | null
      placement: string | null
      behaviourVersion: string | null
      alembicHead: string | null
      reason: string | null
      missing: string[]
      capabilities: Record<string, unknown> | null
    }
    verdict: string
  }
}

describe('airlock doctor', () => {
  const databases: TestDatabase[] = []
  afterAll(async () => {
    for (const database of databases) await database.drop()
  })

  for (const version of fixtureVersions) {
    it(`recognises the ${version} fixture and its capabilities`, async () => {
      const database = await createTestDatabase(version, 1)
      databases.push(database)
      const result = await runCli(['doctor', '--database-url', database.url, '--json'])
      const out = envelope(result) as {
        status: number
        result: {airflow: {version: string; supported: boolean; capabilities: Record<string, unknown>}; verdict: string}
      }
      expect(result.code).toBe(0)
      expect(out.status).toBe(0)
      expect(out.result.airflow.supported).toBe(true)
      expect(out.result.airflow.version).toBe(expectedVersion[version])
      expect(out.result.airflow.capabilities.eventPartitionKey).toBe(compareVersions(version, '3.2.0') >= 0)
      expect(out.result.airflow.capabilities.multiTeam).toBe(compareVersions(version, '3.3.0') >= 0)
      expect(out.result.airflow.capabilities.queueShape).toBe(version === '3.4' ? 'per_event' : 'per_asset')
      expect(out.result.verdict).toMatch(/^ready: /)
    })
  }

  // Every release head (and the migrations between releases) set on the fixture of its line.
  const placements: Array<[FixtureVersion, string, string, string]> = [
    ['3.0', '29ce7909c52b', '3.0.0–3.0.2', 'release'],
    ['3.0', 'fe199e1abd77', '3.0.3–3.0.6', 'release'],
    ['3.1', 'cc92b33c6709', '3.1.0–3.1.7', 'release'],
    ['3.1', '82dbd68e6171', '3.1.8 (partly migrated)', 'partly_migrated'],
    ['3.1', '509b94a1042d', '3.1.8', 'release'],
    ['3.2', '1d6611b6ab7c', '3.2.0–3.2.2', 'release'],
    ['3.3', 'd2f4e1b3c5a7', '3.3.0–3.3.2', 'release'],
    // 3c525f44bea8 is a backport on the 3.3 release branch that no 3.3 release carries (their own
    // migration references end at d2f4e1b3c5a7), and a 3.4.0 migration on main: the tables decide.
    ['3.3', '3c525f44bea8', '3.3 release branch, past 3.3.2 (in none of 3.3.0–3.3.2)', 'development'],
    ['3.4', '3c525f44bea8', '3.4.0 development (main at dd3e57b), partly migrated', 'partly_migrated'],
    ['3.4', 'ee86eed19e24', '3.4.0 development (main at dd3e57b)', 'development'],
  ]
  for (const version of fixtureVersions) {
    const heads = placements.filter(([fixture]) => fixture === version)
    it(`places ${heads.map(([, head]) => head).join(', ')} on the ${version} fixture`, async () => {
      const database = await createTestDatabase(version, 1)
      databases.push(database)
      for (const [, head, release, placement] of heads) {
        await database.knex('alembic_version').update({version_num: head})
        const result = await runCli(['doctor', '--database-url', database.url, '--json'])
        const out = envelope(result) as unknown as DoctorJson
        expect(result.code, `${head}: ${out.result.airflow.reason}`).toBe(0)
        expect(out.result.airflow).toMatchObject({alembicHead: head, version: release, placement})
      }
    })
  }

  it('follows the first release a head places: 3.1.0–3.1.7 behaves as 3.1.0, 3.1.8 as 3.1.8', async () => {
    const database = await createTestDatabase('3.1', 1)
    databases.push(database)
    const first = envelope(await runCli(['doctor', '--database-url', database.url, '--json'])) as unknown as DoctorJson
    expect(first.result.airflow).toMatchObject({
      behaviourVersion: '3.1.0',
      capabilities: {consumerFilter: 'id_and_alias_skip_paused_and_stale'},
    })
    await database.knex('alembic_version').update({version_num: '509b94a1042d'})
    const later = envelope(await runCli(['doctor', '--database-url', database.url, '--json'])) as unknown as DoctorJson
    expect(later.result.airflow).toMatchObject({
      behaviourVersion: '3.1.8',
      capabilities: {consumerFilter: 'all_skip_paused'},
    })
  })

  it('refuses a head that claims tables the database does not have, naming the column (exit 8)', async () => {
    const database = await createTestDatabase('3.0', 1)
    databases.push(database)
    await database.knex('alembic_version').update({version_num: '1d6611b6ab7c'})
    const result = await runCli(['doctor', '--database-url', database.url, '--json'])
    const out = envelope(result) as unknown as DoctorJson
    expect(result.code).toBe(8)
    expect(out.result.airflow.reason).toContain(
      'missing column asset_event.partition_key (added by migration 665854ef0536, Airflow 3.2.0)',
    )
    expect(out.result.airflow.missing).toContain(
      'missing table task_inlet_asset_reference (added by migration 583e80dfcef4, Airflow 3.1.0)',
    )
  })

  it('refuses a plausible head whose tables lack one column of its release (exit 8, the column named)', async () => {
    const database = await createTestDatabase('3.3', 1)
    databases.push(database)
    await database.knex.raw('alter table task_outlet_asset_reference drop column allow_global_consumers')
    const result = await runCli(['doctor', '--database-url', database.url])
    expect(result.code).toBe(8)
    expect(result.stdout).toContain('missing column task_outlet_asset_reference.allow_global_consumers')
  })

  it('refuses tables newer than their head: an unexpected column and the queue key (exit 8)', async () => {
    const database = await createTestDatabase('3.4', 1)
    databases.push(database)
    await database.knex('alembic_version').update({version_num: 'd2f4e1b3c5a7'})
    const result = await runCli(['doctor', '--database-url', database.url, '--json'])
    const out = envelope(result) as unknown as DoctorJson
    expect(result.code).toBe(8)
    expect(out.result.airflow.missing).toContain(
      'unexpected column asset_dag_run_queue.asset_event_id (added by a later migration, b2f1a9c7d4e0, Airflow 3.4.0)',
    )
    expect(out.result.airflow.missing).toContain(
      "asset_dag_run_queue's primary key is (target_dag_id, asset_event_id), expected (asset_id, target_dag_id)",
    )
  })

  it('refuses an unknown alembic head (exit 8), naming it and the nearest release', async () => {
    const database = await createTestDatabase('3.2', 1)
    databases.push(database)
    await database.knex('alembic_version').update({version_num: 'deadbeef0000'})
    const result = await runCli(['doctor', '--database-url', database.url])
    expect(result.code).toBe(8)
    expect(result.stdout).toContain('alembic head deadbeef0000 is not a migration of any Airflow release airlock knows')
    expect(result.stdout).toContain('its tables match Airflow 3.2.0–3.2.2 in every column airlock depends on')
    expect(result.stdout).toContain('--assume-version 3.2')
  })

  it('a migration of a newer release is refused by name before any read, saying what it changes (exit 8)', async () => {
    const database = await createTestDatabase('3.4', 1)
    databases.push(database)
    await database.knex('alembic_version').update({version_num: '7f8c9a2d410e'})
    const result = await runCli(['doctor', '--database-url', database.url])
    expect(result.code).toBe(8)
    expect(result.stdout).toContain(
      'alembic head 7f8c9a2d410e is a migration of Airflow 3.4.0 (an upgrade to it that stopped part-way), released 2026-11-06',
    )
    expect(result.stdout).toContain('renames the stored map index to region_index')
    // A writer stops the same way, before any read.
    expect((await runCli(['complete', '--database-url', database.url, '--dag-id', 'x', '--yes'])).code).toBe(8)
  })

  describe('Airflow 3.4.0 (released 2026-11-06, not supported yet)', () => {
    /** The 3.4 fixture with what 3.4.0's migration reference shows it changes in the tables airlock reads. */
    async function releasedShape(database: TestDatabase, head: string): Promise<void> {
      await database.knex.raw('alter table task_instance rename column map_index to region_index')
      await database.knex('alembic_version').update({version_num: head})
    }

    it('its head is refused naming the release, before any read: exit 8, nothing written', async () => {
      const database = await createTestDatabase('3.4', 1)
      databases.push(database)
      await releasedShape(database, 'b4f1a7d2c903')
      const before = await database.knex('log').count({n: '*'})
      const out = envelope(await runCli(['doctor', '--database-url', database.url, '--json'])) as unknown as DoctorJson
      expect(out.status).toBe(8)
      expect(out.result.airflow).toMatchObject({supported: false, alembicHead: 'b4f1a7d2c903', missing: []})
      expect(out.result.airflow.reason).toContain(
        'alembic head b4f1a7d2c903 is the head of Airflow 3.4.0, released 2026-11-06, which this airlock does not support yet',
      )
      expect(out.result.airflow.reason).toContain('(it supports 3.0.x, 3.1.x, 3.2.x, 3.3.x (through 3.3.2)')
      expect(out.result.airflow.reason).not.toContain('is not a migration of any Airflow release')
      const complete = await runCli(['complete', '--database-url', database.url, '--all-dags', '--yes'])
      expect(complete.code).toBe(8)
      expect(complete.stderr + complete.stdout).toContain('Airflow 3.4.0')
      // --assume-version names a released line, but 3.4.0's head is known, and refused, by name.
      const assumed = await runCli(['doctor', '--database-url', database.url, '--assume-version', '3.3'])
      expect(assumed.code).toBe(8)
      expect(assumed.stdout).toContain('is the head of Airflow 3.4.0')
      expect(await database.knex('log').count({n: '*'})).toEqual(before)
    })

    it("ee86eed19e24 is placed on main's development line when the tables are its, refused as 3.4.0's otherwise", async () => {
      const database = await createTestDatabase('3.4', 1)
      databases.push(database)
      const development = envelope(
        await runCli(['doctor', '--database-url', database.url, '--json']),
      ) as unknown as DoctorJson
      expect(development.result.airflow).toMatchObject({
        alembicHead: 'ee86eed19e24',
        version: '3.4.0 development (main at dd3e57b)',
        placement: 'development',
      })
      expect(development.result.verdict).toContain('No Airflow release airlock knows has this head')

      await releasedShape(database, 'ee86eed19e24')
      const released = envelope(
        await runCli(['doctor', '--database-url', database.url, '--json']),
      ) as unknown as DoctorJson
      expect(released.status).toBe(8)
      expect(released.result.airflow.reason).toContain(
        'alembic head ee86eed19e24 is a migration of Airflow 3.4.0 (an upgrade to it that stopped part-way)',
      )
      expect(released.result.airflow.reason).toContain('its tables have task_instance.region_index')
    })

    it('ee86eed19e24 with tables that are neither: the columns named, 3.4.0 offered as a possibility, not claimed', async () => {
      const database = await createTestDatabase('3.4', 1)
      databases.push(database)
      await database.knex.raw('alter table asset_dag_run_queue drop column asset_event_id cascade')
      const out = envelope(await runCli(['doctor', '--database-url', database.url, '--json'])) as unknown as DoctorJson
      expect(out.status).toBe(8)
      expect(out.result.airflow.reason).toContain('asset_dag_run_queue.asset_event_id')
      expect(out.result.airflow.reason).toContain(
        'if this is an upgrade to it that stopped part-way, this airlock does not support 3.4.0 yet',
      )
      expect(out.result.airflow.reason).not.toContain('is a migration of Airflow 3.4.0 (an upgrade')
    })

    it("a head airlock does not know whose tables are 3.4's (a 3.4 patch) is refused as a 3.4 database", async () => {
      const database = await createTestDatabase('3.4', 1)
      databases.push(database)
      await releasedShape(database, 'deadbeef0000')
      const out = envelope(
        await runCli(['doctor', '--database-url', database.url, '--assume-version', '3.3', '--json']),
      ) as unknown as DoctorJson
      expect(out.status).toBe(8)
      expect(out.result.airflow.reason).toContain(
        'alembic head deadbeef0000 is not a migration airlock knows, and its tables have task_instance.region_index',
      )
      expect(out.result.airflow.reason).toContain('a database of Airflow 3.4, which this airlock does not support yet')
      const assume34 = envelope(
        await runCli(['doctor', '--database-url', database.url, '--assume-version', '3.4', '--json']),
      ) as unknown as DoctorJson
      expect(assume34.status).toBe(8)
    })

    it("a development build's writers warn on every run that it is not a release", async () => {
      const database = await createTestDatabase('3.4', 1)
      databases.push(database)
      const audit = envelope(await runCli(['audit-events', '--database-url', database.url, '--json'])) as {
        warnings: string[]
      }
      expect(audit.warnings.join('\n')).toContain(
        'Airflow 3.4.0 development (main at dd3e57b) is not a release airlock knows (a development build)',
      )
    })
  })

  // Airflow main's heads after the graph (issue: "Airflow main moved on"): each refused before any
  // read, naming what would change what airlock writes, until a migrations-ref.rst places them.
  it.each([
    ['b6a9c2e7d410', '3.4.0', 'adds dag.is_draining'],
    ['b7a04c9e12d5', '3.4.0', 'adds deadline.task_instance_id'],
    ['806e4be38d60', '3.4.0', 'adds task_instance.ignore_upstream_deps'],
    ['c7d4e8f1a203', '3.4.0', 'adds task_instance.workload_run_id'],
    ['f8c2a1d94e03', '3.4.0', 'adds job.team_name'],
    ['ca8499dc1004', '3.4.0', 'import_error.filename'],
    ['90e4d18ccadf', '3.4.0', "main's newest migration"],
    ['0808389e656e', '3.3.0', 'no 3.3 release carries it'],
    ['c71065a1b14f', '3.5.0', 'adds job.session_id'],
  ])('main head %s (%s) is refused by name: exit 8, nothing written', async (head, version, says) => {
    const database = await createTestDatabase('3.4', 1)
    databases.push(database)
    await database.knex('alembic_version').update({version_num: head})
    const before = await database.knex('log').count({n: '*'})
    const out = envelope(await runCli(['doctor', '--database-url', database.url, '--json'])) as unknown as DoctorJson
    expect(out.status).toBe(8)
    expect(out.result.airflow.reason).toContain(
      `alembic head ${head} is an Airflow ${version} migration that airlock cannot place`,
    )
    expect(out.result.airflow.reason).toContain(says)
    expect((await runCli(['complete', '--database-url', database.url, '--all-dags', '--yes'])).code).toBe(8)
    expect(await database.knex('log').count({n: '*'})).toEqual(before)
  })

  it('a migration refused by name stays refused under --assume-version, though its tables look like 3.3', async () => {
    const database = await createTestDatabase('3.3', 1)
    databases.push(database)
    // 0808389e656e adds only deadline columns, which airlock does not check: 3.3's in every column it does.
    await database.knex('alembic_version').update({version_num: '0808389e656e'})
    const out = envelope(
      await runCli(['doctor', '--database-url', database.url, '--assume-version', '3.3', '--json']),
    ) as unknown as DoctorJson
    expect(out.status).toBe(8)
    expect(out.result.airflow.reason).toContain(
      'alembic head 0808389e656e is an Airflow 3.3.0 migration that airlock cannot place',
    )
  })

  it('an unknown head whose tables match no release: the differences named, no --assume-version offered', async () => {
    const database = await createTestDatabase('3.3', 1)
    databases.push(database)
    await database.knex('alembic_version').update({version_num: 'deadbeef0000'})
    await database.knex.raw('alter table task_outlet_asset_reference drop column allow_global_consumers')
    const out = envelope(await runCli(['doctor', '--database-url', database.url, '--json'])) as unknown as DoctorJson
    expect(out.status).toBe(8)
    expect(out.result.airflow.reason).toContain('match no release airlock knows')
    expect(out.result.airflow.reason).not.toContain('--assume-version')
    expect(out.result.airflow.missing).toContain(
      'missing column task_outlet_asset_reference.allow_global_consumers (added by migration c9d4e5f6a7b8, Airflow 3.3.0)',
    )
  })

  it('a head from before Airflow 3.0.0 is refused by name, even with --assume-version', async () => {
    const database = await createTestDatabase('3.0', 1)
    databases.push(database)
    await database.knex('alembic_version').update({version_num: '959e216a3abb'})
    const unfinished = envelope(
      await runCli(['doctor', '--database-url', database.url, '--assume-version', '3.0', '--json']),
    ) as unknown as DoctorJson
    expect(unfinished.status).toBe(8)
    expect(unfinished.result.airflow.reason).toContain('the upgrade to Airflow 3 did not finish')
    await database.knex('alembic_version').update({version_num: '5f2621c13b39'})
    const airflow2 = envelope(
      await runCli(['doctor', '--database-url', database.url, '--json']),
    ) as unknown as DoctorJson
    expect(airflow2.result.airflow.reason).toContain('is Airflow 2.10.3: airlock supports Airflow 3.0.0 and later')
    await database.knex('alembic_version').delete()
    const empty = envelope(await runCli(['doctor', '--database-url', database.url, '--json'])) as unknown as DoctorJson
    expect(empty.result.airflow.reason).toContain('never stamped')
  })

  it('an upgrade that stopped inside 3.2.0 is placed by the migrations it applied, and writers say so', async () => {
    const database = await createTestDatabase('3.1', 1)
    databases.push(database)
    // 665854ef0536 adds asset_event.partition_key; dag.timetable_partitioned and team_name come later.
    await database.knex.raw('alter table asset_event add column partition_key varchar(250)')
    await database.knex('alembic_version').update({version_num: '665854ef0536'})
    const out = envelope(await runCli(['doctor', '--database-url', database.url, '--json'])) as unknown as DoctorJson
    expect(out.status).toBe(0)
    expect(out.result.airflow).toMatchObject({
      version: '3.2.0 (partly migrated)',
      placement: 'partly_migrated',
      capabilities: {eventPartitionKey: true, partitionedTimetables: false},
    })
    expect(out.result.verdict).toContain('finish `airflow db migrate`')
    const audit = envelope(await runCli(['audit-events', '--database-url', database.url, '--json'])) as {
      warnings: string[]
    }
    expect(audit.warnings.join('\n')).toContain('an upgrade stopped at 665854ef0536')
  })

  it("--assume-version places an unknown head only when the tables are that release line's", async () => {
    const database = await createTestDatabase('3.2', 1)
    databases.push(database)
    await database.knex('alembic_version').update({version_num: 'deadbeef0000'})

    const assumed = await runCli(['doctor', '--database-url', database.url, '--assume-version', '3.2', '--json'])
    expect(assumed.code).toBe(0)
    expect((envelope(assumed) as unknown as DoctorJson).result.airflow).toMatchObject({
      version: '3.2.x (assumed; newer than 3.2.2)',
      placement: 'assumed',
      behaviourVersion: '3.2.2',
    })

    const wrongLine = await runCli(['doctor', '--database-url', database.url, '--json'], {
      env: {AIRLOCK_ASSUME_VERSION: '3.3'},
    })
    expect(wrongLine.code).toBe(8)
    expect((envelope(wrongLine) as unknown as DoctorJson).result.airflow.reason).toContain(
      'missing column dag_schedule_asset_reference.allow_producer_teams',
    )

    // A writer takes the same flag: without it the unknown head stops it before any read.
    const refused = await runCli(['audit-events', '--database-url', database.url, '--json'])
    expect(refused.code).toBe(8)
    const audited = await runCli(['audit-events', '--database-url', database.url, '--assume-version', '3.2', '--json'])
    expect(audited.code).toBe(0)
    expect((envelope(audited) as {warnings: string[]}).warnings.join('\n')).toContain(
      'unknown to airlock; working as Airflow 3.2.x',
    )
  })

  it("names a worker task state backend, and warns when a success would clear it and airlock's cannot", async () => {
    const database = await createTestDatabase('3.3', 1)
    databases.push(database)
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-doctor-'))
    const cfg = path.join(dir, 'airflow.cfg')
    // The name apache/airflow #66859 gave the option, in airflow.cfg.
    await fs.writeFile(cfg, '[workers]\nstate_backend = mypackage.state.S3Backend\n')
    try {
      const warning = "a worker's success clears that backend's payloads, airlock's (like REST mark-success) cannot"
      const off = await runCli(['doctor', '--database-url', database.url], {env: {AIRFLOW_CONFIG: cfg}})
      expect(off.code).toBe(0)
      expect(off.stdout).toContain(`mypackage.state.S3Backend ([workers] state_backend from ${cfg})`)
      expect(off.stdout).not.toContain(warning)

      const env = {
        AIRFLOW_CONFIG: cfg,
        AIRFLOW__STATE_STORE__CLEAR_ON_SUCCESS: 'True',
        AIRFLOW__WORKERS__STATE_STORE_BACKEND: 'mypackage.state.GcsBackend',
      }
      const on = await runCli(['doctor', '--database-url', database.url], {env})
      expect(on.code).toBe(0)
      expect(on.stdout).toContain(
        'mypackage.state.GcsBackend ([workers] state_store_backend from AIRFLOW__WORKERS__STATE_STORE_BACKEND)',
      )
      expect(on.stdout).toContain(`! [workers] state_store_backend = mypackage.state.GcsBackend: ${warning}`)
      const json = envelope(await runCli(['doctor', '--database-url', database.url, '--json'], {env})) as {
        result: {airflow: {airflowSettings: {workerStateBackend: unknown}}}
      }
      expect(json.result.airflow.airflowSettings.workerStateBackend).toEqual({
        value: 'mypackage.state.GcsBackend',
        option: '[workers] state_store_backend',
        source: 'AIRFLOW__WORKERS__STATE_STORE_BACKEND',
      })
    } finally {
      await fs.rm(dir, {recursive: true, force: true})
    }

    // Before 3.3 there is no task state table: the option is not read.
    const v32 = await createTestDatabase('3.2', 1)
    databases.push(v32)
    const before = await runCli(['doctor', '--database-url', v32.url, '--json'], {
      env: {AIRFLOW__WORKERS__STATE_STORE_BACKEND: 'mypackage.state.GcsBackend'},
    })
    expect(
      (envelope(before) as {result: {airflow: {airflowSettings: {workerStateBackend: unknown}}}}).result.airflow
        .airflowSettings.workerStateBackend,
    ).toBeNull()
  })

  it('--assume-version is ignored for a head airlock knows, and a value that is no release line is exit 2', async () => {
    const database = await createTestDatabase('3.2', 1)
    databases.push(database)
    const known = await runCli(['doctor', '--database-url', database.url, '--assume-version', '3.3', '--json'])
    expect(known.code).toBe(0)
    expect((envelope(known) as unknown as DoctorJson).result.airflow).toMatchObject({
      version: '3.2.0–3.2.2',
      placement: 'release',
    })
    for (const value of ['banana', '3.1.6']) {
      const bad = await runCli(['doctor', '--database-url', database.url, '--assume-version', value])
      expect(bad.code).toBe(2)
      expect(bad.stderr).toContain(
        'expected an Airflow release line such as 3.2 (from --assume-version or AIRLOCK_ASSUME_VERSION)',
      )
    }

    await database.knex('alembic_version').update({version_num: 'deadbeef0000'})
    const development = envelope(
      await runCli(['doctor', '--database-url', database.url, '--assume-version', '3.4', '--json']),
    ) as unknown as DoctorJson
    expect(development.status).toBe(8)
    expect(development.result.airflow.reason).toContain('names no released Airflow line airlock knows')
  })

  it("reports the scheduler and the DAG processor as Airflow's health check judges them: information, not a failure", async () => {
    for (const version of ['3.1', '3.3'] as const) {
      const database = await createTestDatabase(version, 1)
      databases.push(database)
      const doctor = async (env: Record<string, string> = {}) => {
        // 12 s ago: dead at 3.1's 10.5 s threshold, alive at 3.3's 30 s.
        await database
          .knex('job')
          .where({job_type: 'DagProcessorJob'})
          .update({latest_heartbeat: database.knex.raw(`now() - interval '12 seconds'`)})
        const json = await runCli(['doctor', '--database-url', database.url, '--json'], {env})
        const human = await runCli(['doctor', '--database-url', database.url], {env})
        const airflow = (envelope(json) as {result: {airflow: {components: Record<string, Record<string, unknown>>}}})
          .result.airflow
        return {code: json.code, components: airflow.components, text: human.stdout}
      }
      // No job row at all: doctor still says ready.
      let seen = await doctor()
      expect(seen.code).toBe(0)
      expect(seen.components.scheduler).toMatchObject({alive: false, last_heartbeat: null, state: null})
      expect(seen.text).toMatch(/scheduler\s+none \(the job table has no SchedulerJob row\)/)
      expect(seen.text).toMatch(/DAG processor\s+none \(the job table has no DagProcessorJob row\)/)

      // A scheduler that beat a year ago and a DAG processor that beat 12 s ago.
      await database.knex('job').insert([
        {
          job_type: 'SchedulerJob',
          state: 'running',
          hostname: 'sched-1',
          latest_heartbeat: database.knex.raw(`now() - interval '365 days'`),
        },
        {
          job_type: 'DagProcessorJob',
          state: 'running',
          hostname: 'proc-1',
          latest_heartbeat: database.knex.raw(`now() - interval '20 seconds'`),
        },
      ])
      seen = await doctor()
      expect(seen.code).toBe(0)
      expect(seen.components.scheduler).toMatchObject({
        alive: false,
        state: 'running',
        hostname: 'sched-1',
        threshold_seconds: 30,
      })
      expect(seen.text).toMatch(
        /scheduler\s+not running \(latest job on sched-1 running, last heartbeat \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ, 365 d ago/,
      )
      // The DAG processor's threshold: [dag_processor] health_check_threshold (30 s) from 3.2,
      // before it [scheduler] job_heartbeat_sec × 2.1 (10.5 s).
      expect(seen.components.dag_processor).toMatchObject(
        version === '3.3' ? {alive: true, threshold_seconds: 30} : {alive: false, threshold_seconds: 10.5},
      )
      if (version === '3.3')
        expect(seen.text).toMatch(/DAG processor\s+alive on proc-1 \(last heartbeat .*, \d+ s ago\)/)
      // Settable where Airflow reads it.
      const lenient = await doctor(
        version === '3.3'
          ? {AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD: '40000000'}
          : {AIRFLOW__SCHEDULER__JOB_HEARTBEAT_SEC: '100'},
      )
      expect(version === '3.3' ? lenient.components.scheduler : lenient.components.dag_processor).toMatchObject({
        alive: true,
      })
    }
  })

  it('a role that can only read: doctor exits 9 and names what still works; a writer stops before its first item (exit 2)', async () => {
    const database = await createTestDatabase('3.0', 2)
    databases.push(database)
    await scenario(database.knex).producer('etl', {outlets: 1}).build()
    const role = await createReadOnlyRole(database)
    try {
      const url = new URL(role.url)

      const checked = await runCli(['doctor', '--database-url', url.toString(), '--json'])
      expect(checked.code).toBe(9)
      const report = (envelope(checked) as unknown as DoctorJson).result
      expect(report.verdict).toMatch(/^read-only: /)
      expect(report.verdict).toContain(
        'Still works: doctor, export-events, audit-events (without --fix), audit-locks, complete --plan, replay-events --plan',
      )

      const before = await database.knex('task_instance').where({dag_id: 'etl'}).first()
      const written = await runCli(['complete', '--database-url', url.toString(), '--dag-id', 'etl', '--yes', '--json'])
      expect(written.code).toBe(2)
      const error = (envelope(written) as {error: {code: string; message: string}}).error
      expect(error.code).toBe('PERMISSION_DENIED')
      expect(error.message).toContain('UPDATE on task_instance')
      expect(await database.knex('task_instance').where({dag_id: 'etl'}).first()).toEqual(before)

      const audit = await runCli(['audit-events', '--database-url', url.toString(), '--dag-id', 'etl', '--json'])
      expect([0, 6]).toContain(audit.code)
    } finally {
      await role.drop()
    }
  })

  it("shows the server's lock settings, what Airflow's sessions get, not airlock's own session limits", async () => {
    const database = await createTestDatabase('3.0', 3)
    databases.push(database)
    // The server's lock_timeout stays as built (0 on a plain server); the database gets its own statement_timeout.
    const [{lock_timeout: serverLockTimeout}] = (
      await database.knex.raw<{rows: Array<{lock_timeout: string}>}>(
        "select reset_val as lock_timeout from pg_settings where name = 'lock_timeout'",
      )
    ).rows as [{lock_timeout: string}]
    expect(serverLockTimeout).toBe('0')
    await database.knex.raw(`alter database ?? set statement_timeout = '7s'`, [database.name])

    const checked = await runCli(['doctor', '--database-url', database.url, '--json'])
    expect(checked.code).toBe(0)
    const settings = (
      envelope(checked) as {
        result: {settings: Array<{name: string; value: string; source: string; level: string; airlockSession: string}>}
      }
    ).result.settings
    const byName = new Map(settings.map((setting) => [setting.name, setting]))
    expect(byName.get('lock_timeout')).toMatchObject({
      value: '0 (disabled)',
      level: 'advice',
      airlockSession: '10000ms',
    })
    expect(byName.get('lock_timeout')!.source).not.toBe('client')
    expect(byName.get('statement_timeout')).toMatchObject({
      value: '7000ms',
      source: 'database',
      level: 'ok',
      airlockSession: '300000ms',
    })

    const shown = await runCli(['doctor', '--database-url', database.url])
    expect(shown.stdout).toMatch(/lock_timeout: Sessions wait forever for row locks/)

    const audit = await runCli(['audit-locks', '--database-url', database.url, '--samples', '1', '--json'])
    const auditSettings = (envelope(audit) as {result: {settings: Array<{name: string; value: string}>}}).result
      .settings
    expect(auditSettings.find((setting) => setting.name === 'lock_timeout')?.value).toBe('0 (disabled)')
    expect(auditSettings.find((setting) => setting.name === 'statement_timeout')?.value).toBe('7000ms')
  })

  it('reports a plain non-Airflow database as unsupported (exit 8) with what is missing', async () => {
    const database = await createTestDatabase('empty', 1)
    databases.push(database)
    const result = await runCli(['doctor', '--database-url', database.url, '--json'])
    const out = envelope(result) as {
      status: number
      result: {airflow: {supported: boolean; missing: string[]}; verdict: string}
    }
    expect(result.code).toBe(8)
    expect(out.status).toBe(8)
    expect(out.result.airflow.supported).toBe(false)
    expect(out.result.airflow.missing).toContain('table alembic_version')
  })

  it('exits 7 on an unreachable port and never prints the password', async () => {
    const result = await runCli([
      'doctor',
      '--database-url',
      'postgresql://airflow:Sup3rSecretPw@127.0.0.1:1/airflow',
      '--json',
    ])
    const out = envelope(result) as {status: number; error: {code: string; message: string}}
    expect(result.code).toBe(7)
    expect(out.status).toBe(7)
    expect(out.error.code).toBe('DATABASE_UNREACHABLE')
    expect(out.error.message).toContain('127.0.0.1:1/airflow')
    expect(result.stdout + result.stderr).not.toContain('Sup3rSecretPw')
  })

  it('a failing doctor never tells the operator to run doctor; the other commands still do', async () => {
    const url = 'postgresql://airflow@127.0.0.1:1/airflow'
    const doctor = await runCli(['doctor', '--database-url', url])
    expect(doctor.code).toBe(7)
    expect(doctor.stderr).toContain('Cannot connect')
    expect(doctor.stderr).not.toContain('airlock doctor')
    const json = envelope(await runCli(['doctor', '--database-url', url, '--json'])) as {error: {actions: string[]}}
    expect(json.error.actions.filter((action) => action.includes('airlock doctor'))).toEqual([])
    // Other commands keep the advice: doctor is where their connection is checked.
    const exported = await runCli(['export-events', '--database-url', url])
    expect(exported.code).toBe(7)
    expect(exported.stderr).toContain('airlock doctor shows which connection setting is in use')
  })

  it("reads Airflow's own AIRFLOW__DATABASE__SQL_ALCHEMY_CONN (psycopg2 style) and says so", async () => {
    const database = await createTestDatabase('3.2', 1)
    databases.push(database)
    const sqlalchemy = database.url.replace(/^postgresql:/, 'postgresql+psycopg2:')
    const result = await runCli(['doctor', '--json'], {env: {AIRFLOW__DATABASE__SQL_ALCHEMY_CONN: sqlalchemy}})
    const out = envelope(result) as {result: {connection: {source: string}; airflow: {version: string}}}
    expect(result.code).toBe(0)
    expect(out.result.connection.source).toBe('AIRFLOW__DATABASE__SQL_ALCHEMY_CONN')
    expect(out.result.airflow.version).toBe('3.2.0–3.2.2')
  })

  it('exits 2 with one clear line on an unknown flag, and the error envelope under --json', async () => {
    const human = await runCli(['doctor', '--bogus'])
    expect(human.code).toBe(2)
    expect(human.stdout).toBe('')
    expect(human.stderr.trim().split('\n')).toHaveLength(1)
    expect(human.stderr).toContain('--bogus')
    const json = await runCli(['doctor', '--bogus', '--json'])
    const out = envelope(json) as {status: number; error: {code: string}}
    expect(json.code).toBe(2)
    expect(out).toMatchObject({status: 2, error: {code: 'USAGE'}})
  })

  it('a refused flag combination that echoes a --database-url never prints its password', async () => {
    for (const url of [
      'postgresql://airflow:Sup3rSecretPw@db/airflow',
      'postgresql://db/airflow?password=Sup3rSecretPw',
    ])
      for (const args of [
        ['--embedded', '--database-url', url],
        ['--embedded', `--database-url=${url}`],
      ]) {
        const human = await runCli(['doctor', ...args])
        expect(human.code, args.join(' ')).toBe(2)
        expect(human.stderr, args.join(' ')).toContain('--database-url')
        expect(human.stdout + human.stderr, args.join(' ')).not.toContain('Sup3rSecretPw')
        const json = await runCli(['doctor', ...args, '--json'])
        expect(json.code).toBe(2)
        expect(json.stdout + json.stderr, args.join(' ')).not.toContain('Sup3rSecretPw')
      }
  })

  it('exits 2 when no database is configured, naming the ways to configure one', async () => {
    const result = await runCli(['doctor'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('--database-url')
    expect(result.stderr).toContain('--embedded')
  })
})

const haveDump = await dumpAvailable()

describe.skipIf(!haveDump)('airlock doctor on the restored real Airflow 3.0.0 dump', () => {
  let dump: TestDatabase
  beforeAll(async () => {
    dump = await createTestDatabase('empty', 1)
    await restoreDump(dump.knex)
  })
  afterAll(async () => dump?.drop())

  it('reports Airflow 3.0.0, supported, every privilege granted', async () => {
    const result = await runCli(['doctor', '--database-url', dump.url, '--json'])
    const out = envelope(result) as {
      status: number
      result: {airflow: {version: string; alembicHead: string}; privileges: Array<{granted: boolean}>}
    }
    expect(result.code).toBe(0)
    expect(out.result.airflow).toMatchObject({version: '3.0.0–3.0.2', alembicHead: '29ce7909c52b'})
    expect(out.result.privileges.every((p) => p.granted)).toBe(true)
  })
})
