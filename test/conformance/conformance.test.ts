import type {Knex} from 'knex'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {Downstream} from '../../src/protocol/downstream.js'
import {compareVersions} from '../../src/airflow/revisions.js'
import type {AirflowSchema} from '../../src/airflow/schema.js'
import {fixtureVersions, type FixtureVersion} from '../../src/worlds/fixtureSchema.js'
import type {OutletEventInput} from '../../src/selection/workItem.js'
import type {ItemResult} from '../../src/protocol/outcomes.js'
import {airflowOf, completeOne, planOne, schemaOf} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {assignTeams} from '../support/multiTeam.js'
import {dumpAvailable, restoreDump} from '../support/restoreDump.js'
import {rerunAsAirflowDoes, scenario, type ScenarioBuilder, type World} from '../support/scenario.js'
import {airflowSucceeds, taskOutletsOf, type OutletEvent} from './airflowSuccess.js'
import {createAssetTriggeredRuns} from './scheduler.js'
import {runExplain} from '../../src/explain/runExplain.js'
import type {DagExplanation} from '../../src/explain/explainDag.js'
import {snapshot, type Snapshot} from './snapshot.js'

/**
 * The conformance suite: for each world below, Airflow's own success path (transcribed per
 * release in airflowSuccess.ts) and `airlock complete` run on the same world, and every row they
 * write is compared: task instance, events, aliases and their links, assets created, queue rows
 * (with what their created_at stands for), then the run the scheduler's asset-triggered step
 * (scheduler.ts) creates from them and the events that run consumes. Each world names the Airflow
 * test it mirrors, and asserts what that test asserts.
 *
 * It runs on every fixture version and on the restored Airflow 3.0.0 dump.
 */

interface Case {
  /** The Airflow test this world mirrors. */
  mirrors: string
  world(builder: ScenarioBuilder): ScenarioBuilder
  /** The task instance that succeeds: producer DAG and task (default: its first task), map index. */
  task: {dag: string; task?: string; mapIndex?: number}
  /** What the worker reports in `outlet_events`. */
  outletEvents?: OutletEvent[]
  /** Rows written before the success, at a time before it (a queue row already there, an older event). */
  setup?(knex: Knex, world: World, schema: AirflowSchema): Promise<void>
  /** airlock's flags for this world. */
  airlock?: (schema: AirflowSchema) => {strictOutlets?: boolean; allowUnqueuedConsumers?: boolean}
  /** Where the task instance's state departs from Airflow's on purpose (compared without it). */
  taskInstanceDeparts?: (schema: AirflowSchema) => boolean
  /** What the mirrored Airflow test asserts, checked on both sides. */
  expect(side: Snapshot, schema: AirflowSchema): void
  /** The releases the world exists on (default: every one). */
  appliesTo?: (schema: AirflowSchema) => boolean
}

const cases: Record<string, Case> = {
  'two consumers of one asset: one event, a queue row each': {
    mirrors: 'tests/unit/assets/test_manager.py::test_register_asset_change',
    world: (s) =>
      s
        .producer('etl', {outlets: 1})
        .consumer('dag1', {on: ['etl']})
        .consumer('dag2', {on: ['etl']}),
    task: {dag: 'etl'},
    expect(side) {
      expect(side.events).toHaveLength(1)
      expect(side.queue.map((q) => q.split(' created')[0])).toEqual([
        'etl.produce.out_1 -> dag1',
        'etl.produce.out_1 -> dag2',
      ])
    },
  },
  'an asset without consumers: its event, no queue row': {
    mirrors: 'tests/unit/assets/test_manager.py::test_register_asset_change_no_downstreams',
    world: (s) => s.producer('etl', {outlets: 2}),
    task: {dag: 'etl'},
    expect(side) {
      expect(side.events).toHaveLength(2)
      expect(side.queue).toEqual([])
    },
  },
  "the worker's extra for an outlet; an extra for an asset that is not an outlet is dropped": {
    mirrors: 'tests/unit/models/test_taskinstance.py::test_outlet_asset_extra_ignore_different',
    world: (s) => s.producer('other', {tasks: ['make'], outlets: 1, state: 'success'}).producer('etl', {outlets: 1}),
    task: {dag: 'etl'},
    outletEvents: [
      {dest_asset_key: {name: 'etl.produce.out_1', uri: 's3://lake/etl/produce/out_1'}, extra: {one: 1}},
      {dest_asset_key: {name: 'other.make.out_1', uri: 's3://lake/other/make/out_1'}, extra: {two: 2}},
    ],
    expect(side) {
      expect(side.events).toEqual([
        expect.stringMatching(/^etl\.produce\.out_1 extra=\{"one":1\} from=etl\.produce\//) as string,
      ])
    },
  },
  'Asset.ref by name and by uri: one event each, for the active asset they name': {
    mirrors:
      'api_fastapi/execution_api/versions/head/test_task_instances.py::test_ti_update_state_to_success_with_asset_events',
    world: (s) =>
      s
        .producer('other', {tasks: ['make'], outlets: 2, state: 'success'})
        .producer('etl', {outlets: 0, refs: [{name: 'other.make.out_1'}, {uri: 's3://lake/other/make/out_2'}]})
        .consumer('by_name', {on: ['other.make.out_1'], by: 'name'}),
    task: {dag: 'etl'},
    outletEvents: [{dest_asset_key: {name: 'other.make.out_1', uri: 's3://lake/other/make/out_1'}, extra: {foo: 1}}],
    expect(side) {
      expect(side.events.map((e) => e.split(' from=')[0])).toEqual([
        'other.make.out_1 extra={"foo":1}',
        'other.make.out_2 extra={}',
      ])
      expect(side.queue.map((q) => q.split(' created')[0])).toEqual(['other.make.out_1 -> by_name'])
    },
  },
  'three aliases, two extras: two events, the first linked to two aliases': {
    mirrors: 'tests/unit/models/test_taskinstance.py::test_outlet_multiple_asset_alias',
    world: (s) =>
      s
        .producer('etl', {outlets: 1, aliases: ['alias_1', 'alias_2', 'alias_3']})
        .consumer('by_alias_3', {alias: 'alias_3'}),
    task: {dag: 'etl'},
    outletEvents: [
      {
        dest_asset_key: {name: 'etl.produce.out_1', uri: 's3://lake/etl/produce/out_1'},
        extra: {},
        source_alias_name: 'alias_1',
      },
      {
        dest_asset_key: {name: 'etl.produce.out_1', uri: 's3://lake/etl/produce/out_1'},
        extra: {},
        source_alias_name: 'alias_2',
      },
      {
        dest_asset_key: {name: 'etl.produce.out_1', uri: 's3://lake/etl/produce/out_1'},
        extra: {k: 'v'},
        source_alias_name: 'alias_3',
      },
    ],
    expect(side) {
      // The direct event of the outlet, plus one per (asset, extra) emitted through aliases.
      const throughAliases = side.events.filter((e) => e.includes(' via='))
      expect(throughAliases.map((e) => [e.split(' ')[1], e.split(' via=')[1]])).toEqual([
        ['extra={"k":"v"}', 'alias_3'],
        ['extra={}', 'alias_1+alias_2'],
      ])
      expect(side.aliasAssets).toEqual([
        'alias_1 -> etl.produce.out_1',
        'alias_2 -> etl.produce.out_1',
        'alias_3 -> etl.produce.out_1',
      ])
      expect(side.queue.map((q) => q.split(' created')[0])).toEqual(['etl.produce.out_1 -> by_alias_3'])
    },
  },
  'an alias emitting an asset that is also a direct outlet: two events': {
    mirrors: 'tests/unit/models/test_taskinstance.py::test_outlet_asset_alias',
    world: (s) => s.producer('etl', {outlets: 1, aliases: ['lake']}),
    task: {dag: 'etl'},
    outletEvents: [
      {
        dest_asset_key: {name: 'etl.produce.out_1', uri: 's3://lake/etl/produce/out_1'},
        extra: {},
        source_alias_name: 'lake',
      },
    ],
    expect(side) {
      expect(side.events.map((e) => e.replace(/ from=.* at=new/, ''))).toEqual([
        'etl.produce.out_1 extra={}',
        'etl.produce.out_1 extra={} via=lake',
      ])
    },
  },
  'an alias emitting an asset that does not exist: the asset is created, not activated': {
    mirrors: 'tests/unit/models/test_taskinstance.py::test_outlet_asset_alias_asset_not_exists',
    world: (s) => s.producer('etl', {outlets: 1, aliases: ['lake']}).consumer('by_alias', {alias: 'lake'}),
    task: {dag: 'etl'},
    outletEvents: [
      {
        dest_asset_key: {name: 'does_not_exist', uri: 's3://lake/does_not_exist'},
        dest_asset_extra: {owner: 'lake'},
        extra: {key: 'value'},
        source_alias_name: 'lake',
      },
    ],
    expect(side, schema) {
      // From 3.1.5 (apache/airflow #58038) the created asset takes group "asset" and its declared extra.
      expect(side.assets).toContain(
        from(schema, '3.1.5')
          ? 'does_not_exist uri=s3://lake/does_not_exist group=asset extra={"owner":"lake"} active=false'
          : 'does_not_exist uri=s3://lake/does_not_exist group= extra={} active=false',
      )
      expect(side.events.filter((e) => e.startsWith('does_not_exist'))).toEqual([
        expect.stringContaining('extra={"key":"value"}') as string,
      ])
      expect(side.queue.map((q) => q.split(' created')[0])).toEqual(['does_not_exist -> by_alias'])
    },
  },
  'a declared alias without its asset_alias row: the alias is created': {
    mirrors: 'assets/manager.py AssetManager._add_asset_alias_association (AssetAliasModel(name=name))',
    world: (s) => s.producer('etl', {outlets: 1, aliases: ['fresh']}),
    task: {dag: 'etl'},
    outletEvents: [
      {
        dest_asset_key: {name: 'etl.produce.out_1', uri: 's3://lake/etl/produce/out_1'},
        extra: {},
        source_alias_name: 'fresh',
      },
    ],
    async setup(knex) {
      await knex('asset_alias').where({name: 'fresh'}).delete()
    },
    expect(side) {
      expect(side.aliases).toEqual(['fresh group='])
      expect(side.aliasAssets).toEqual(['fresh -> etl.produce.out_1'])
    },
  },
  'an inactive outlet: what Airflow keeps, per release': {
    mirrors:
      'models/taskinstance.py register_asset_changes_in_db (AirflowInactiveAssetInInletOrOutletException, then "Task has inactive assets"); ti_update_state',
    world: (s) => s.producer('etl', {outlets: 1, inactive: 1}).consumer('report', {on: ['etl']}),
    task: {dag: 'etl'},
    // 3.0.0 keeps nothing of the registration, which --strict-outlets matches; 3.0.2–3.0.6
    // commit the active outlet's event and queue row with the FAILED state (airlock's default
    // writes the same rows, its task instance SUCCESS: the documented departure); 3.1+ skips the
    // inactive outlet and succeeds, exactly as airlock's default does.
    airlock: (schema) => ({strictOutlets: keepsNothingOnInactive(schema)}),
    taskInstanceDeparts: (schema) => from(schema, '3.0.2') && !from(schema, '3.1.0'),
    expect(side, schema) {
      if (keepsNothingOnInactive(schema)) {
        expect(side.events).toEqual([])
        expect(side.queue).toEqual([])
      } else {
        expect(side.events.map((e) => e.split(' ')[0])).toEqual(['etl.produce.out_1'])
        expect(side.queue.map((q) => q.split(' created')[0])).toEqual(['etl.produce.out_1 -> report'])
      }
    },
  },
  'paused and stale consumers, by id and by name, per release': {
    mirrors: 'tests/unit/jobs/test_scheduler_job.py::test_no_create_dag_runs_when_dag_disabled',
    world: (s) =>
      s
        .producer('etl', {outlets: 1})
        .consumer('paused_by_id', {on: ['etl'], paused: true})
        .consumer('stale_by_id', {on: ['etl'], stale: true})
        .consumer('paused_by_name', {on: ['etl'], by: 'name', paused: true})
        .consumer('stale_by_name', {on: ['etl'], by: 'name', stale: true}),
    task: {dag: 'etl'},
    expect(side, schema) {
      const queued = side.queue.map((q) => q.split(' -> ')[1]!.split(' ')[0])
      if (schema.capabilities.consumerFilter === 'id_and_alias_skip_paused_and_stale')
        expect(queued).toEqual(['paused_by_name', 'stale_by_name'])
      else expect(queued).toEqual(['stale_by_id', 'stale_by_name'])
      // Neither a paused nor a stale DAG gets a run: their rows stay queued.
      expect(side.runs).toEqual([])
    },
  },
  'a consumer of two assets, one produced: queued, no run; a consumer of that one asset gets its run': {
    mirrors: 'tests/unit/jobs/test_scheduler_job.py::test_create_dag_runs_assets',
    world: (s) =>
      s
        .producer('other', {tasks: ['make'], outlets: 1, state: 'success'})
        .producer('etl', {outlets: 1})
        .consumer('consumer_multiple', {on: ['etl.produce.out_1', 'other.make.out_1']})
        .consumer('consumer_single', {on: ['etl.produce.out_1']}),
    task: {dag: 'etl'},
    expect(side) {
      expect(side.queue.map((q) => q.split(' created')[0])).toEqual([
        'etl.produce.out_1 -> consumer_multiple',
        'etl.produce.out_1 -> consumer_single',
      ])
      expect(side.runs).toEqual([
        expect.stringMatching(
          /^consumer_single run_after=new consumes=\[etl\.produce\.out_1 extra=\{\} from=etl\.produce\//,
        ) as string,
      ])
    },
  },
  'an OR condition (asset_any): one of its two assets is enough for a run': {
    mirrors: 'tests/unit/assets/test_evaluation.py (AssetAny); dags_needing_dagruns',
    world: (s) =>
      s
        .producer('other', {tasks: ['make'], outlets: 1, state: 'success'})
        .producer('etl', {outlets: 1})
        .consumer('either', {on: ['etl.produce.out_1', 'other.make.out_1'], condition: 'any'})
        .consumer('both', {on: ['etl.produce.out_1', 'other.make.out_1']}),
    task: {dag: 'etl'},
    expect(side) {
      // Both are queued; only the OR gets a run (the AND waits for other.make.out_1).
      expect(queuedDags(side)).toEqual(['both', 'either'])
      expect(side.runs).toEqual([
        expect.stringMatching(/^either run_after=new consumes=\[etl\.produce\.out_1 /) as string,
      ])
    },
  },
  'a consumer scheduled on an alias the event went through: queued and run': {
    mirrors: 'tests/unit/jobs/test_scheduler_job.py::test_create_dag_runs_asset_alias_with_asset_event_attached',
    world: (s) => s.producer('etl', {outlets: 1, aliases: ['lake']}).consumer('by_alias', {alias: 'lake'}),
    task: {dag: 'etl'},
    outletEvents: [
      {
        dest_asset_key: {name: 'etl.produce.out_1', uri: 's3://lake/etl/produce/out_1'},
        extra: {},
        source_alias_name: 'lake',
      },
    ],
    expect(side) {
      expect(side.runs).toEqual([expect.stringMatching(/^by_alias run_after=new consumes=\[/) as string])
    },
  },
  'a consumer scheduled on Asset.ref by name: queued and run': {
    mirrors: 'tests/unit/assets/test_evaluation.py (AssetRef resolved to its asset); dags_needing_dagruns',
    world: (s) => s.producer('etl', {outlets: 1}).consumer('by_name', {on: ['etl'], by: 'name'}),
    task: {dag: 'etl'},
    expect(side) {
      expect(queuedDags(side)).toEqual(['by_name'])
      expect(side.runs).toEqual([expect.stringMatching(/^by_name run_after=new/) as string])
    },
  },
  '3.2+: a consumer whose cached cap flag outlived the cap: queued, no run, the flag named': {
    mirrors: 'models/dag.py DagModel.dags_needing_dagruns (exceeds_max_non_backfill == false()); apache/airflow #73032',
    world: (s) => s.producer('etl', {outlets: 1}).consumer('report', {on: ['etl']}),
    task: {dag: 'etl'},
    appliesTo: (schema) => schema.capabilities.maxRunsFlag,
    // No active run at all: only the flag, left set by a run type that does not recompute it.
    setup: (knex) => knex('dag').where({dag_id: 'report'}).update({exceeds_max_non_backfill: true}),
    expect(side) {
      expect(side.queue.map((q) => q.split(' created')[0])).toEqual(['etl.produce.out_1 -> report'])
      expect(side.runs).toEqual([])
    },
  },
  'a consumer at max_active_runs: queued, no run': {
    mirrors: 'tests/unit/models/test_dag.py::test_dags_needing_dagruns_asset_triggered_dag_max_active_runs',
    world: (s) => s.producer('etl', {outlets: 1}).consumer('busy', {on: ['etl'], maxActiveRuns: 1}),
    task: {dag: 'etl'},
    async setup(knex) {
      await knex('dag_run').insert({
        dag_id: 'busy',
        run_id: 'manual__busy',
        run_type: 'manual',
        run_after: '2026-01-01T00:00:00Z',
        state: 'running',
      })
    },
    expect(side) {
      expect(queuedDags(side)).toEqual(['busy'])
      expect(side.runs).toEqual([])
    },
  },
  "a rerun: try 1 succeeded and was cleared, try 2 succeeds; its event and log row are try 2's, try 1's stays": {
    mirrors:
      'models/taskinstance.py clear_task_instances → prepare_db_for_next_try (TaskInstanceHistory.record_ti), models/dagrun.py schedule_tis (try_number + 1)',
    // No consumer: the rows of the rerun's success are the point here; what a consumer's run takes
    // of two tries' events is the scheduler's window, which the other worlds compare.
    world: (s) => s.producer('etl', {outlets: 1}),
    task: {dag: 'etl'},
    async setup(knex, world) {
      // Try 1 ran and succeeded at a fixed time in the past (the same on both sides): its event
      // stamped after its end_date and before its row's last write, as the API server writes them.
      const ti = world.ti('etl')
      await knex('task_instance').where({id: ti.id}).update({
        state: 'success',
        start_date: '2026-01-01T00:00:00Z',
        end_date: '2026-01-01T00:10:00Z',
        updated_at: '2026-01-01T00:10:01Z',
      })
      await knex('asset_event').insert({
        asset_id: world.asset('etl.produce.out_1').id,
        extra: '{}',
        source_dag_id: ti.dag_id,
        source_task_id: ti.task_id,
        source_run_id: ti.run_id,
        source_map_index: ti.map_index,
        timestamp: '2026-01-01T00:10:00.500Z',
      })
      // Cleared, scheduled and started again as Airflow does it: a new id, try 2.
      ti.id = await rerunAsAirflowDoes(knex, ti.id)
    },
    expect(side) {
      expect(side.events).toEqual([
        expect.stringContaining('at=2026-01-01T00:10:00.500Z') as string,
        expect.stringContaining('at=new') as string,
      ])
      // The success row (Airflow's from 3.2, airlock's on every release) names try 2.
      const successRows = side.logs.filter((row) => row.event === 'success')
      expect(successRows.map((row) => row.try_number)).toEqual(successRows.map(() => 2))
      expect(side.taskInstance.state).toBe('success')
    },
  },
  'a queue row already there: created_at is kept before 3.4, and the run is computed from it': {
    mirrors: 'assets/manager.py AssetManager._postgres_queue_dagruns (ON CONFLICT DO NOTHING); scheduler window',
    world: (s) => s.producer('etl', {outlets: 1}).consumer('report', {on: ['etl']}),
    task: {dag: 'etl'},
    async setup(knex, world, schema) {
      // An earlier try's event, at a fixed time in the past (the same on both sides), still queued for report.
      const asset = world.asset('etl.produce.out_1')
      const [event] = await knex('asset_event')
        .insert({
          asset_id: asset.id,
          extra: '{}',
          source_dag_id: 'etl',
          source_task_id: 'produce',
          source_run_id: 'manual__earlier',
          source_map_index: -1,
          timestamp: '2026-01-01T00:00:00Z',
        })
        .returning('id')
      await knex('asset_dag_run_queue').insert({
        asset_id: asset.id,
        target_dag_id: 'report',
        created_at: '2026-01-01T00:00:01Z',
        ...(schema.capabilities.queueShape === 'per_event' ? {asset_event_id: (event as {id: number}).id} : {}),
      })
      // report was scheduled on the asset before that event: from 3.3 a first run with catchup
      // off takes no event stamped before the DAG's first schedule reference (apache/airflow #68749).
      await knex('dag_schedule_asset_reference').where({dag_id: 'report'}).update({created_at: '2025-12-31T00:00:00Z'})
    },
    expect(side, schema) {
      if (schema.capabilities.queueShape === 'per_event') {
        // One row per event: the run consumes both and runs after the new one.
        expect(side.queue).toHaveLength(2)
        expect(side.runs).toEqual([
          expect.stringMatching(/^report run_after=new consumes=\[.*manual__earlier.*; .*scheduled__/) as string,
        ])
      } else {
        // The first created_at stays: the run is triggered at it and consumes only the earlier event.
        expect(side.queue).toEqual([expect.stringMatching(/^etl\.produce\.out_1 -> report created=\d{4}-/) as string])
        expect(side.runs).toEqual([
          expect.stringMatching(/^report run_after=\d{4}-.* consumes=\[[^;]*manual__earlier[^;]*\]$/) as string,
        ])
      }
    },
  },
  'partition keys per event (3.3+): one event per key with its extra, a silent outlet takes the run key, keyed events queue no plain DAG':
    {
      mirrors:
        'models/taskinstance.py register_asset_changes_in_db (payloads_by_asset, apache/airflow #66782, #67718); assets/manager.py _queue_dagruns (#63848)',
      world: (s) => s.producer('etl', {outlets: 2}).consumer('report', {on: ['etl']}),
      task: {dag: 'etl'},
      appliesTo: (schema) => from(schema, '3.3.0'),
      outletEvents: [
        {
          dest_asset_key: {name: 'etl.produce.out_1', uri: 's3://lake/etl/produce/out_1'},
          extra: {rows: 3},
          partition_key: 'us',
        },
        {
          dest_asset_key: {name: 'etl.produce.out_1', uri: 's3://lake/etl/produce/out_1'},
          extra: {rows: 3},
          partition_key: 'eu',
        },
      ],
      expect(side) {
        expect(side.events.map((e) => e.replace(/ from=.* at=new/, ''))).toEqual([
          'etl.produce.out_1 extra={"rows":3} partition=eu',
          'etl.produce.out_1 extra={"rows":3} partition=us',
          'etl.produce.out_2 extra={}',
        ])
        // Only the key-less event queues the plain consumer.
        expect(side.queue.map((q) => q.split(' created')[0])).toEqual(['etl.produce.out_2 -> report'])
      },
    },
  'a key-less event partition-aware DAGs listen to: not queued; from 3.2 a "missing partition key" log row per event': {
    mirrors: 'assets/manager.py AssetManager._queue_partitioned_dags (Log(event="missing partition key"))',
    world: (s) =>
      s
        .producer('etl', {outlets: 1})
        .consumer('parts', {on: ['etl']})
        .consumer('plain', {on: ['etl']}),
    task: {dag: 'etl'},
    appliesTo: (schema) => schema.capabilities.partitionedTimetables,
    async setup(knex) {
      await knex('dag').where({dag_id: 'parts'}).update({timetable_partitioned: true})
    },
    expect(side, schema) {
      expect(side.queue.map((q) => q.split(' created')[0])).toEqual(['etl.produce.out_1 -> plain'])
      const missing = side.logs.filter((row) => row.event === 'missing partition key')
      if (!from(schema, '3.2.0')) expect(missing).toEqual([])
      else
        expect(missing).toEqual([
          expect.objectContaining({
            dag_id: 'etl',
            task_id: 'produce',
            map_index: -1,
            try_number: 1,
            owner: null,
            extra: expect.stringMatching(
              /^Listening Dags are partition-aware but the run has no partition key \(listening_dags=\['parts'\], asset_id=\d+, run_id=scheduled__2026-12-01T00:00:00\+00:00, dag_id=etl, task_id=produce\)$/,
            ) as string,
          }),
        ])
    },
  },
  'a mapped task instance: the one task entry, its map index on the event': {
    mirrors: 'models/taskinstance.py register_asset_changes_in_db (source_map_index)',
    world: (s) => s.producer('etl', {outlets: 1, mapIndexes: [0, 1]}).consumer('report', {on: ['etl']}),
    task: {dag: 'etl', mapIndex: 1},
    expect(side) {
      expect(side.events).toEqual([
        expect.stringContaining('from=etl.produce/scheduled__2026-12-01T00:00:00+00:00[1]') as string,
      ])
    },
  },
}

const versions: Array<FixtureVersion | 'dump'> = [...fixtureVersions]
if (await dumpAvailable()) versions.push('dump')

describe.each(versions)('conformance on %s', (version) => {
  conformance(cases, async () => {
    if (version !== 'dump') return createTestDatabase(version, 2)
    const db = await createTestDatabase('empty', 2)
    await restoreDump(db.knex)
    return db
  })
})

/**
 * Multi-team (3.3+, `[core] multi_team` on): `AssetManager._filter_dags_by_team`. The producer
 * `etl` is in team_a's bundle; each case places its consumers and sets the allow-lists.
 */
const teamCases: Record<string, Case> = {
  "a consumer of the producer's team and a teamless one are queued, another team's is not": {
    mirrors: 'assets/manager.py AssetManager._filter_dags_by_team (producer_pass)',
    world: (s) =>
      s
        .producer('etl', {outlets: 1})
        .consumer('same_team', {on: ['etl']})
        .consumer('other_team', {on: ['etl']})
        .consumer('teamless', {on: ['etl']}),
    task: {dag: 'etl'},
    setup: (knex) => assignTeams(knex, {etl: 'team_a', same_team: 'team_a', other_team: 'team_b', teamless: null}),
    expect(side) {
      expect(queuedDags(side)).toEqual(['same_team', 'teamless'])
    },
  },
  "allow_producer_teams lets another team's consumer accept the producer's events": {
    mirrors: 'assets/manager.py AssetManager._filter_dags_by_team (allow_producer_teams)',
    world: (s) =>
      s
        .producer('etl', {outlets: 1})
        .consumer('accepts_a', {on: ['etl']})
        .consumer('other_team', {on: ['etl']}),
    task: {dag: 'etl'},
    async setup(knex) {
      await assignTeams(knex, {etl: 'team_a', accepts_a: 'team_b', other_team: 'team_b'})
      await knex('dag_schedule_asset_reference')
        .where({dag_id: 'accepts_a'})
        .update({allow_producer_teams: JSON.stringify(['team_a'])})
    },
    expect(side) {
      expect(queuedDags(side)).toEqual(['accepts_a'])
    },
  },
  'a teamless producer: a team consumer is queued unless it sets allow_global_producers false': {
    mirrors: 'assets/manager.py AssetManager._filter_dags_by_team (is_teamless_source)',
    world: (s) =>
      s
        .producer('etl', {outlets: 1})
        .consumer('open_team', {on: ['etl']})
        .consumer('closed_team', {on: ['etl']}),
    task: {dag: 'etl'},
    async setup(knex) {
      await assignTeams(knex, {etl: null, open_team: 'team_b', closed_team: 'team_b'})
      await knex('dag_schedule_asset_reference').where({dag_id: 'closed_team'}).update({allow_global_producers: false})
    },
    expect(side) {
      expect(queuedDags(side)).toEqual(['open_team'])
    },
  },
  "the producer's outlet restricts consumers: allow_consumer_teams and allow_global_consumers false": {
    mirrors: 'assets/manager.py AssetManager._filter_dags_by_team (has_consumer_team_filter)',
    world: (s) =>
      s
        .producer('etl', {outlets: 1})
        .consumer('same_team', {on: ['etl']})
        .consumer('listed_team', {on: ['etl']})
        .consumer('unlisted_team', {on: ['etl']})
        .consumer('teamless', {on: ['etl']}),
    task: {dag: 'etl'},
    async setup(knex) {
      await assignTeams(knex, {
        etl: 'team_a',
        same_team: 'team_a',
        listed_team: 'team_b',
        unlisted_team: 'team_c',
        teamless: null,
      })
      // Both other-team consumers accept team_a's events; the producer only lets team_b in.
      await knex('dag_schedule_asset_reference')
        .whereIn('dag_id', ['listed_team', 'unlisted_team'])
        .update({allow_producer_teams: JSON.stringify(['team_a'])})
      await knex('task_outlet_asset_reference')
        .where({dag_id: 'etl', task_id: 'produce'})
        .update({allow_consumer_teams: JSON.stringify(['team_b']), allow_global_consumers: false})
    },
    expect(side) {
      expect(queuedDags(side)).toEqual(['listed_team', 'same_team'])
    },
  },
}

describe.each(['3.3', '3.4'] as const)('multi-team conformance on %s, AIRFLOW__CORE__MULTI_TEAM=true', (version) => {
  const previous = process.env.AIRFLOW__CORE__MULTI_TEAM
  beforeAll(() => {
    process.env.AIRFLOW__CORE__MULTI_TEAM = 'true'
  })
  afterAll(() => {
    if (previous === undefined) delete process.env.AIRFLOW__CORE__MULTI_TEAM
    else process.env.AIRFLOW__CORE__MULTI_TEAM = previous
  })
  conformance(teamCases, () => createTestDatabase(version, 2))

  it('with AIRFLOW__CORE__MULTI_TEAM=false or unset, every consumer is queued whatever the teams', async () => {
    const db = await createTestDatabase(version, 2)
    try {
      const c = teamCases["a consumer of the producer's team and a teamless one are queued, another team's is not"]!
      const world = await c.world(scenario(db.knex)).build()
      await c.setup!(db.knex, world, await schemaOf(db.knex))
      process.env.AIRFLOW__CORE__MULTI_TEAM = 'false'
      expect((await schemaOf(db.knex)).capabilities.teamFilter).toBe(false)
      await completeOne(db.knex, world.ti('etl').id)
      const queued = await db.knex('asset_dag_run_queue').orderBy('target_dag_id').pluck('target_dag_id')
      expect(queued).toEqual(['other_team', 'same_team', 'teamless'])
      // Unset, Airflow's default (False) decides, whatever teams the bundles have.
      delete process.env.AIRFLOW__CORE__MULTI_TEAM
      expect((await schemaOf(db.knex)).capabilities.teamFilter).toBe(false)
    } finally {
      process.env.AIRFLOW__CORE__MULTI_TEAM = 'true'
      await db.drop()
    }
  })
})

/** Whether the release keeps nothing of a registration that hit an inactive outlet (3.0.0–3.0.1, before #50773). */
function keepsNothingOnInactive(schema: AirflowSchema): boolean {
  return !from(schema, '3.0.2')
}

/** Whether the release airlock follows on this database is `release` or later (compared as numbers). */
function from(schema: AirflowSchema, release: string): boolean {
  return compareVersions(schema.behaviourVersion, release) >= 0
}

function queuedDags(side: Snapshot): string[] {
  return side.queue.map((q) => q.split(' -> ')[1]!.split(' ')[0]!)
}

/** Runs each case on both sides on the database `open` gives, and compares them. */
function conformance(table: Record<string, Case>, open: () => Promise<TestDatabase>): void {
  let db: TestDatabase
  let schema: AirflowSchema
  beforeAll(async () => {
    db = await open()
    schema = await schemaOf(db.knex)
  })
  afterAll(async () => db?.drop())

  const now = async () =>
    (await db.knex.raw<{rows: Array<{now: Date}>}>('select clock_timestamp() as now')).rows[0]!.now

  /** Builds the world, runs one side on it, and reads every row back, before and after the scheduler's step. */
  async function side(c: Case, succeed: (tiId: string) => Promise<unknown>): Promise<Snapshot> {
    const world = await c.world(scenario(db.knex)).build()
    await c.setup?.(db.knex, world, schema)
    // The side's own view of the database (a team assignment in setup turns the team filter on).
    schema = await schemaOf(db.knex)
    const ti = world.ti(c.task.dag, c.task.task, {mapIndex: c.task.mapIndex})
    const since = await now()
    await succeed(ti.id)
    // What explain says of every asset-scheduled DAG, read before the scheduler's step takes it.
    const explained = await explainVerdicts(db.knex)
    let created: Awaited<ReturnType<typeof createAssetTriggeredRuns>> = []
    const side = await snapshot(db.knex, schema, since, ti, async () => {
      created = await createAssetTriggeredRuns(db.knex, schema)
      return created
    })
    // Before 3.4, the events explain says a will_run DAG's run consumes are the ones it does.
    for (const dag of explained.filter((e) => e.consumes)) {
      expect({dag: dag.dag_id, events: dag.consumes!.events.map((e) => e.id).sort()}).toEqual({
        dag: dag.dag_id,
        events: [...(created.find((r) => r.dagId === dag.dag_id)?.eventIds ?? [])].sort(),
      })
    }
    // explain's verdict is what the transcribed scheduler step then does: will_run exactly for
    // the DAGs it gives a run. Partitioned consumers get their runs from their partition runs,
    // a step the transcription does not carry: compared on the others.
    const ran = [...new Set(side.runs.map((run) => run.split(' ')[0]!))].sort()
    expect(
      explained
        .filter((dag) => dag.verdict === 'will_run')
        .map((dag) => dag.dag_id)
        .sort(),
    ).toEqual(ran.filter((dag) => explained.some((e) => e.dag_id === dag && e.partitions === undefined)))
    return side
  }

  it.each(Object.entries(table))('%s', async (_, c) => {
    // A world its release cannot hold (partition keys per event before 3.3) passes as nothing to compare.
    if (c.appliesTo && !c.appliesTo(schema)) return
    const airflow = await side(c, async (tiId) =>
      airflowSucceeds(db.knex, schema, tiId, await taskOutletsOf(db.knex, tiId), c.outletEvents ?? []),
    )
    let preview: Downstream[] = []
    let planned: ItemResult<{outcome: string}> | undefined
    let written: ItemResult<{outcome: string}> | undefined
    const airlock = await side(c, async (tiId) => {
      const options = {
        outletEvents: toAirlockInputs(c.outletEvents ?? []),
        strictOutlets: c.airlock?.(schema).strictOutlets,
        allowUnqueuedConsumers: c.airlock?.(schema).allowUnqueuedConsumers,
      }
      planned = await planOne(db.knex, tiId, options)
      const item = await completeOne(db.knex, tiId, options)
      written = item
      preview = (item.report?.downstream as Downstream[] | undefined) ?? []
      return item
    })
    // --plan says what the write does: its outcome, the keys it queues and every consumer's
    // preview. What only the write resolves (partition keys a task chooses per event, an alias
    // target the write creates) the plan says it does not plan: such a world is compared on its
    // outcome only.
    expect(outcomeOf(planned!)).toBe(outcomeOf(written!))
    const unplanned = planned!.warnings.some((w) => w.includes('not planned'))
    if (!unplanned) {
      expect(planned!.queued).toBe(written!.queued)
      expect(planned!.report?.downstream ?? []).toEqual(preview)
    }
    // The downstream preview says ready exactly for the consumers it reaches that the
    // transcribed scheduler step then gives a run.
    const reached = new Set(preview.map((dag) => dag.dag_id))
    const ran = [...new Set(airlock.runs.map((run) => run.split(' ')[0]!))].filter((dag) => reached.has(dag)).sort()
    expect(
      preview
        .filter((dag) => dag.ready)
        .map((dag) => dag.dag_id)
        .sort(),
    ).toEqual(ran)

    c.expect(airflow, schema)
    c.expect(airlock, schema)
    const {logs: airflowLogs, ...airflowRows} = airflow
    const {logs: airlockLogs, ...airlockRows} = airlock
    if (c.taskInstanceDeparts?.(schema)) {
      expect({...airlockRows, taskInstance: undefined}).toEqual({...airflowRows, taskInstance: undefined})
      return
    }

    expect(airlockRows).toEqual(airflowRows)

    // The audit row: Airflow writes one from 3.2 (apache/airflow #61932); airlock writes one on every
    // release, with the operator as owner and its provenance as extra (a documented departure).
    // Every other row (the 3.3 "missing partition key" row) is compared whole.
    const comparable = (row: Record<string, unknown>) =>
      row.event === 'success' ? {...row, owner: undefined, extra: undefined} : row
    const others = (logs: Array<Record<string, unknown>>) => logs.filter((row) => row.event !== 'success')
    if (airflow.taskInstance.state !== 'success') {
      expect(airlockLogs).toEqual([])
    } else if (from(schema, '3.2.0')) {
      // airlock writes its success row with the registration, Airflow after the state: order aside.
      const byEvent = (rows: Array<Record<string, unknown>>) =>
        rows.map(comparable).sort((a, b) => String(a.event).localeCompare(String(b.event)))
      expect(byEvent(airlockLogs)).toEqual(byEvent(airflowLogs))
    } else {
      expect(others(airlockLogs)).toEqual(others(airflowLogs))
      expect(airflowLogs.filter((row) => row.event === 'success')).toEqual([])
      expect(airlockLogs.filter((row) => row.event === 'success').map((row) => row.event)).toEqual(['success'])
    }
  })
}

/**
 * A worker's outlet_events entries as an airlock input line gives them: the worker's one entry
 * per partition key of an asset's accessor is one entry with those keys.
 */
function toAirlockInputs(events: readonly OutletEvent[]): OutletEventInput[] {
  const inputs: OutletEventInput[] = []
  for (const event of events) {
    const asset = event.dest_asset_extra
      ? {...event.dest_asset_key, extra: event.dest_asset_extra}
      : event.dest_asset_key
    const same = inputs.find(
      (i) =>
        event.partition_key !== undefined &&
        i.partitionKeys &&
        typeof i.asset !== 'string' &&
        i.asset.name === event.dest_asset_key.name &&
        i.asset.uri === event.dest_asset_key.uri &&
        JSON.stringify(i.extra) === JSON.stringify(event.extra),
    )
    if (same) {
      same.partitionKeys!.push(event.partition_key!)
      continue
    }
    inputs.push({
      asset,
      extra: event.extra,
      ...(event.source_alias_name === undefined ? {} : {alias: event.source_alias_name}),
      ...(event.partition_key === undefined ? {} : {partitionKeys: [event.partition_key]}),
    })
  }
  return inputs
}

/** An item's outcome as a write reports it: a plan's would_* is the write's own. */
function outcomeOf(item: ItemResult<{outcome: string}>): string {
  return item.result.outcome
}

/** `airlock explain --all` on the world as it stands, every DAG's explanation (partitioned ones aside in the comparison). */
async function explainVerdicts(knex: Knex): Promise<DagExplanation[]> {
  const dags: DagExplanation[] = []
  await runExplain(await airflowOf(knex), {selection: {kind: 'all'}, runs: 0, stuckAfterMs: 3_600_000}, (dag) =>
    dags.push(dag),
  )
  return dags
}
