import type {Knex} from 'knex'

import {compareVersions} from '../../src/airflow/revisions.js'
import type {AirflowSchema} from '../../src/airflow/schema.js'

/**
 * Airflow's own success path, transcribed statement by statement for the conformance suite: what
 * the execution API writes when a worker reports a task instance SUCCESS
 * (`ti_update_state`, airflow-core/src/airflow/api_fastapi/execution_api/routes/task_instances.py),
 * with its outlets registered by `TaskInstance.register_asset_changes_in_db`
 * (airflow-core/src/airflow/models/taskinstance.py) and `AssetManager.register_asset_change`
 * (airflow-core/src/airflow/assets/manager.py), per release.
 *
 * Written independently of airlock's store, in Airflow's order and granularity (lock first, one
 * asset at a time), so that a conformance test compares two implementations, not one with itself.
 */

/** An entry of the worker's `task_outlets` (task-sdk `_build_asset_profiles`). */
export interface AssetProfile {
  type: 'Asset' | 'AssetNameRef' | 'AssetUriRef' | 'AssetAlias'
  name?: string
  uri?: string
}

/**
 * An entry of the worker's `outlet_events` (task-sdk `_serialize_outlet_events`): a direct one
 * (with, from 3.3, one entry per partition key added: apache/airflow #65447), or an alias
 * emission (with the target asset's own extra from 3.1.5: #58038).
 */
export interface OutletEvent {
  dest_asset_key: {name: string; uri: string}
  extra: Record<string, unknown>
  source_alias_name?: string
  dest_asset_extra?: Record<string, unknown>
  partition_key?: string
}

export type AirflowOutcome = 'success' | 'failed'

interface LockedTi {
  id: string
  dag_id: string
  run_id: string
  task_id: string
  map_index: number
  try_number: number
  hostname: string | null
  logical_date: Date | null
  partition_key: string | null
  owners: string | null
}

interface AssetModel {
  id: number
  name: string
  uri: string
}

const key = (name: string, uri: string) => JSON.stringify([name, uri])

/**
 * The worker's `task_outlets` for a task instance, built from its serialized DAG as the worker
 * builds them from the DAG file: one profile per declared outlet.
 */
export async function taskOutletsOf(knex: Knex, tiId: string): Promise<AssetProfile[]> {
  const {rows} = await knex.raw<{rows: Array<{task_id: string; data: unknown}>}>(
    `select ti.task_id, sd.data from task_instance ti join serialized_dag sd on sd.dag_version_id = ti.dag_version_id where ti.id = ?`,
    [tiId],
  )
  const row = rows[0]
  if (!row) throw new Error(`no serialized DAG for task instance ${tiId}`)
  const data = (typeof row.data === 'string' ? JSON.parse(row.data) : row.data) as {
    dag: {
      tasks: Array<{__var: {task_id: string; outlets?: Array<{__type: string; __var: {name?: string; uri?: string}}>}}>
    }
  }
  const task = data.dag.tasks.find((t) => t.__var.task_id === row.task_id)
  return (task?.__var.outlets ?? []).map((o): AssetProfile => {
    if (o.__type === 'asset') return {type: 'Asset', name: o.__var.name, uri: o.__var.uri}
    if (o.__type === 'asset_alias') return {type: 'AssetAlias', name: o.__var.name}
    if (o.__var.name !== undefined) return {type: 'AssetNameRef', name: o.__var.name}
    return {type: 'AssetUriRef', uri: o.__var.uri}
  })
}

/**
 * Runs the transcribed success path. When an outlet resolves to no active asset, what happens
 * depends on the release's `register_asset_changes_in_db`:
 *
 * - 3.0.0–3.0.1 (the 3.0 fixture and dump): it raises at its very end, after every valid outlet
 *   was registered; the exception ends the request (HTTP 500, issue #48737), the transaction rolls
 *   back, nothing is written and the task instance stays as it was;
 * - from apache/airflow #50773 (3.0.2, in its release notes) `ti_update_state` catches it and sets
 *   the task instance FAILED in the same session, so the valid outlets' events and queue rows
 *   commit with it (the 3.1 fixture: the stored 3.1-era copy still raises);
 * - after #55714 (the stored 3.2- and 3.3-era copies; its release unverified) it logs "Task has
 *   inactive assets" and carries on: the task instance succeeds with the active outlets' events.
 */
export async function airflowSucceeds(
  knex: Knex,
  schema: AirflowSchema,
  tiId: string,
  taskOutlets: readonly AssetProfile[],
  outletEvents: readonly OutletEvent[],
): Promise<AirflowOutcome> {
  const from = (release: string) => compareVersions(schema.behaviourVersion, release) >= 0
  let outcome: AirflowOutcome = 'success'
  try {
    await knex.transaction(async (trx) => {
      // ti_update_state: the task instance row is locked first (SELECT … FOR UPDATE), with the
      // run's logical date and the DAG's owners read alongside for the log row (3.2+).
      const partition = schema.capabilities.eventPartitionKey ? 'dr.partition_key' : 'null::text as partition_key'
      const {rows} = await trx.raw<{rows: LockedTi[]}>(
        `select ti.id, ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.try_number, ti.hostname, dr.logical_date, ${partition}, d.owners
           from task_instance ti
           join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id
           join dag d on d.dag_id = ti.dag_id
          where ti.id = ? for update of ti`,
        [tiId],
      )
      const ti = rows[0]
      if (!ti) throw new Error(`no task instance ${tiId}`)
      try {
        await registerAssetChangesInDb(trx, schema, ti, taskOutlets, outletEvents)
      } catch (error) {
        if (!(error instanceof InactiveOutlets) || !from('3.0.2')) throw error
        outcome = 'failed'
      }

      // TI.duration_expression_update on PostgreSQL: duration = EPOCH(end_date - start_date). The
      // fix for apache/airflow #56704 clears next_method/next_kwargs on every terminal state (not
      // placed in a release yet; transcribed from 3.2), 3.0's success branch leaves them.
      const clearsNext = from('3.2.0')
      await trx.raw(
        `update task_instance
            set state = ?, end_date = clock_timestamp(), duration = extract(epoch from clock_timestamp() - start_date),
                ${clearsNext ? 'next_method = null, next_kwargs = null,' : ''} updated_at = clock_timestamp()
          where id = ?`,
        [outcome, tiId],
      )
      if (from('3.2.0')) {
        // 3.2+ (apache/airflow #61932): a Log row per state change.
        await trx.raw(
          `insert into log (dttm, dag_id, task_id, run_id, map_index, try_number, event, logical_date, owner, extra)
           values (clock_timestamp(), ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          [
            ti.dag_id,
            ti.task_id,
            ti.run_id,
            ti.map_index,
            ti.try_number,
            outcome,
            ti.logical_date,
            ti.owners,
            ti.hostname ? JSON.stringify({host_name: ti.hostname}) : null,
          ],
        )
      }
    })
    return outcome
  } catch (error) {
    if (error instanceof InactiveOutlets) return 'failed'
    throw error
  }
}

class InactiveOutlets extends Error {}

/** `TaskInstance.register_asset_changes_in_db`, 3.x. */
async function registerAssetChangesInDb(
  trx: Knex.Transaction,
  schema: AirflowSchema,
  ti: LockedTi,
  taskOutlets: readonly AssetProfile[],
  outletEvents: readonly OutletEvent[],
): Promise<void> {
  const assetKeys = new Map<string, {name: string; uri: string}>()
  for (const o of taskOutlets)
    if (o.type === 'Asset' && o.name && o.uri) assetKeys.set(key(o.name, o.uri), {name: o.name, uri: o.uri})
  const nameRefs = [...new Set(taskOutlets.flatMap((o) => (o.type === 'AssetNameRef' && o.name ? [o.name] : [])))]
  const uriRefs = [...new Set(taskOutlets.flatMap((o) => (o.type === 'AssetUriRef' && o.uri ? [o.uri] : [])))]

  // asset_models: the active assets named by a key, a name ref or a uri ref.
  const {rows: models} = await trx.raw<{rows: AssetModel[]}>(
    `select a.id, a.name, a.uri from asset a
      where exists (select 1 from asset_active aa where aa.name = a.name and aa.uri = a.uri)
        and ((a.name, a.uri) in (select * from unnest(?::text[], ?::text[])) or a.name = any(?::text[]) or a.uri = any(?::text[]))
      order by a.id`,
    [[...assetKeys.values()].map((k) => k.name), [...assetKeys.values()].map((k) => k.uri), nameRefs, uriRefs],
  )
  const byKey = new Map(models.map((m) => [key(m.name, m.uri), m]))
  const direct = outletEvents.filter((e) => e.source_alias_name === undefined)
  const from = (release: string) => compareVersions(schema.behaviourVersion, release) >= 0
  const bad: string[] = []
  // Up to 3.2: asset_event_extras = {key: event["extra"]}, every event with the run's partition
  // key. From 3.3 (apache/airflow #66782, #67718): payloads_by_asset, one register_asset_change per
  // payload, its key or the run's; an outlet with no payload gets one event with the run's key.
  const perEventKeys = from('3.3.0')
  const payloadsOf = (
    match: (e: OutletEvent) => boolean,
  ): Array<{extra: Record<string, unknown> | undefined; partitionKey: string | null}> => {
    const mine = direct.filter(match)
    if (!perEventKeys) return [{extra: mine.at(-1)?.extra, partitionKey: ti.partition_key}]
    if (mine.length === 0) return [{extra: undefined, partitionKey: ti.partition_key}]
    return mine.map((e) => ({extra: e.extra, partitionKey: e.partition_key ?? ti.partition_key}))
  }
  const register = async (model: AssetModel, match: (e: OutletEvent) => boolean) => {
    for (const payload of payloadsOf(match)) await registerAssetChange(trx, schema, ti, model, payload)
  }
  // Up to 3.2 a ref's extra is looked up by the name or uri the entry names; from 3.3 by the
  // resolved model's key.
  const sameAsset = (m: AssetModel) => (e: OutletEvent) =>
    e.dest_asset_key.name === m.name && e.dest_asset_key.uri === m.uri

  for (const [k, assetKey] of assetKeys) {
    const model = byKey.get(k)
    if (!model) bad.push(assetKey.name)
    else await register(model, sameAsset(model))
  }

  // Name refs: the last model of a name wins (a dict comprehension over asset_models).
  const byName = new Map(models.map((m) => [m.name, m]))
  for (const name of nameRefs) {
    const model = byName.get(name)
    if (!model) bad.push(`name=${name}`)
    else await register(model, perEventKeys ? sameAsset(model) : (e) => e.dest_asset_key.name === name)
  }

  const byUri = new Map(models.map((m) => [m.uri, m]))
  for (const uri of uriRefs) {
    const model = byUri.get(uri)
    if (!model) bad.push(`uri=${uri}`)
    else await register(model, perEventKeys ? sameAsset(model) : (e) => e.dest_asset_key.uri === uri)
  }

  // _asset_event_extras_from_aliases, for the aliases the task declares: 3.0 groups by (asset key,
  // frozenset(extra.items())); from 3.1.3 (apache/airflow #57352) by json.dumps(extra,
  // sort_keys=True), the event's extra then json.loads of it (keys sorted at every level); from
  // 3.1.5 (#58038) by (asset key, dumps(dest_asset_extra), dumps(extra)).
  const outletAliasNames = new Set(taskOutlets.flatMap((o) => (o.type === 'AssetAlias' && o.name ? [o.name] : [])))
  const groups = new Map<
    string,
    {
      asset: {name: string; uri: string}
      assetExtra: Record<string, unknown>
      extra: Record<string, unknown>
      aliases: Set<string>
    }
  >()
  for (const event of outletEvents) {
    if (event.source_alias_name === undefined || !outletAliasNames.has(event.source_alias_name)) continue
    const extraKey = from('3.1.3')
      ? pythonSortedDumps(event.extra)
      : JSON.stringify(Object.entries(event.extra).sort(([a], [b]) => (a < b ? -1 : 1)))
    const assetExtra = from('3.1.5') ? (event.dest_asset_extra ?? {}) : {}
    const groupKey = JSON.stringify([
      event.dest_asset_key.name,
      event.dest_asset_key.uri,
      pythonSortedDumps(assetExtra),
      extraKey,
    ])
    const extra = from('3.1.3') ? (JSON.parse(pythonSortedDumps(event.extra)) as Record<string, unknown>) : event.extra
    const group = groups.get(groupKey) ?? {asset: event.dest_asset_key, assetExtra, extra, aliases: new Set<string>()}
    group.aliases.add(event.source_alias_name)
    groups.set(groupKey, group)
  }

  for (const group of groups.values()) {
    let model = await findAsset(trx, group.asset)
    if (!model) {
      // Up to 3.1.4: AssetModel(name=…, uri=…), its defaults group '' and extra {}. From 3.1.5:
      // AssetModel.from_serialized(SerializedAsset(name, uri, group="asset", extra=dest_asset_extra)).
      const shape = from('3.1.5') ? {group: 'asset', extra: JSON.stringify(group.assetExtra)} : {group: '', extra: '{}'}
      await trx.raw(
        `insert into asset (name, uri, "group", extra, created_at, updated_at) values (?, ?, ?, ?, clock_timestamp(), clock_timestamp())`,
        [group.asset.name, group.asset.uri, shape.group, shape.extra],
      )
      model = await findAsset(trx, group.asset)
    }

    // Alias events carry the run's partition key on every release (#71999: "alias-resolved events
    // keep the producing Dag run's key").
    await registerAssetChange(trx, schema, ti, model!, {
      extra: group.extra,
      aliases: [...group.aliases],
      partitionKey: ti.partition_key,
    })
  }

  // From 3.1.0 (#55714; read in 3.1.8's, 3.2.2's and 3.3.2's packages): logged, not raised.
  if (bad.length > 0 && !from('3.1.0')) throw new InactiveOutlets(bad.join(', '))
}

/** Python's json.dumps(value, sort_keys=True): keys sorted at every level (the spacing does not matter to a key). */
function pythonSortedDumps(value: unknown): string {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .sort(([a], [b]) => (a < b ? -1 : 1))
              .map(([k, x]) => [k, sort(x)]),
          )
        : v
  return JSON.stringify(sort(value))
}

async function findAsset(trx: Knex.Transaction, asset: {name: string; uri: string}): Promise<AssetModel | undefined> {
  const {rows} = await trx.raw<{rows: AssetModel[]}>(`select id, name, uri from asset where name = ? and uri = ?`, [
    asset.name,
    asset.uri,
  ])
  return rows[0]
}

/** `AssetManager.register_asset_change` for a task instance's event. */
async function registerAssetChange(
  trx: Knex.Transaction,
  schema: AirflowSchema,
  ti: LockedTi,
  asset: AssetModel,
  options: {extra: Record<string, unknown> | undefined; aliases?: string[]; partitionKey: string | null},
): Promise<void> {
  const aliases = options.aliases ?? []
  if (aliases.length > 0) {
    // _add_asset_alias_association: a missing alias is created (AssetAliasModel(name=…), group ''),
    // then linked to the asset unless already related.
    for (const name of aliases) {
      await trx.raw(`insert into asset_alias (name, "group") values (?, '') on conflict do nothing`, [name])
      await trx.raw(
        `insert into asset_alias_asset (alias_id, asset_id) select id, ? from asset_alias where name = ? on conflict do nothing`,
        [asset.id, name],
      )
    }
  }

  const partition = schema.capabilities.eventPartitionKey
  const {rows} = await trx.raw<{rows: Array<{id: number}>}>(
    `insert into asset_event (asset_id, extra, source_task_id, source_dag_id, source_run_id, source_map_index, "timestamp"${partition ? ', partition_key' : ''})
     values (?, ?, ?, ?, ?, ?, clock_timestamp()${partition ? ', ?' : ''}) returning id`,
    [
      asset.id,
      JSON.stringify(options.extra ?? {}),
      ti.task_id,
      ti.dag_id,
      ti.run_id,
      ti.map_index,
      ...(partition ? [options.partitionKey] : []),
    ],
  )
  const eventId = rows[0]!.id

  // Which consumers: before #60022 (3.0.x, 3.1.0–3.1.6) id and alias consumers skip paused and
  // stale DAGs, name/uri consumers are unfiltered; after it every kind skips paused DAGs only.
  const legacy = compareVersions(schema.behaviourVersion, '3.1.7') < 0
  const idAliasFilter = legacy ? 'not d.is_paused and not d.is_stale' : 'not d.is_paused'
  const refFilter = legacy ? 'true' : 'not d.is_paused'
  const consumers = new Set<string>()
  const {rows: byId} = await trx.raw<{rows: Array<{dag_id: string}>}>(
    `select r.dag_id from dag_schedule_asset_reference r join dag d on d.dag_id = r.dag_id where r.asset_id = ? and ${idAliasFilter}`,
    [asset.id],
  )
  for (const row of byId) consumers.add(row.dag_id)
  for (const name of aliases) {
    await trx.raw(
      `insert into asset_alias_asset_event (alias_id, event_id) select id, ? from asset_alias where name = ? on conflict do nothing`,
      [eventId, name],
    )
    const {rows: byAlias} = await trx.raw<{rows: Array<{dag_id: string}>}>(
      `select r.dag_id from dag_schedule_asset_alias_reference r join asset_alias al on al.id = r.alias_id join dag d on d.dag_id = r.dag_id
        where al.name = ? and ${idAliasFilter}`,
      [name],
    )
    for (const row of byAlias) consumers.add(row.dag_id)
  }

  const {rows: byRef} = await trx.raw<{rows: Array<{dag_id: string}>}>(
    `select distinct d.dag_id from dag d
       left join dag_schedule_asset_name_reference n on n.dag_id = d.dag_id
       left join dag_schedule_asset_uri_reference u on u.dag_id = d.dag_id
      where (n.name = ? or u.uri = ?) and ${refFilter}`,
    [asset.name, asset.uri],
  )
  for (const row of byRef) consumers.add(row.dag_id)
  const allowed = await filterDagsByTeam(trx, schema, ti, asset, [...consumers].sort())
  await queueDagruns(trx, schema, ti, asset.id, eventId, allowed, options.partitionKey)
}

/** `AssetManager._filter_dags_by_team` (3.3+), for an event a task produced (`source_is_api` false). */
async function filterDagsByTeam(
  trx: Knex.Transaction,
  schema: AirflowSchema,
  ti: LockedTi,
  asset: AssetModel,
  dagIds: string[],
): Promise<string[]> {
  if (!schema.capabilities.teamFilter || dagIds.length === 0) return dagIds
  // DagModel.get_dag_id_to_team_name_mapping: a DAG's team is its bundle's.
  const {rows: teamRows} = await trx.raw<{rows: Array<{dag_id: string; team_name: string}>}>(
    `select d.dag_id, t.team_name from dag d join dag_bundle_team t on t.dag_bundle_name = d.bundle_name where d.dag_id = any(?)`,
    [[...dagIds, ti.dag_id]],
  )
  const teamOf = new Map(teamRows.map((r) => [r.dag_id, r.team_name]))
  const sourceTeam = teamOf.get(ti.dag_id)
  const sourceTeams = new Set(sourceTeam === undefined ? [] : [sourceTeam])
  // asset_model.scheduled_dags: the consumers' allow-lists for producers.
  const {rows: scheduled} = await trx.raw<{
    rows: Array<{dag_id: string; allow_producer_teams: string[] | null; allow_global_producers: boolean}>
  }>(
    `select dag_id, allow_producer_teams, allow_global_producers from dag_schedule_asset_reference where asset_id = ?`,
    [asset.id],
  )
  const allowTeams = new Map(scheduled.map((r) => [r.dag_id, r.allow_producer_teams ?? []]))
  const allowGlobal = new Map(scheduled.map((r) => [r.dag_id, r.allow_global_producers]))
  // The producing task's outlet reference: its allow-lists for consumers.
  const {rows: outlets} = await trx.raw<{
    rows: Array<{allow_consumer_teams: string[] | null; allow_global_consumers: boolean}>
  }>(
    `select allow_consumer_teams, allow_global_consumers from task_outlet_asset_reference where dag_id = ? and task_id = ? and asset_id = ?`,
    [ti.dag_id, ti.task_id, asset.id],
  )
  const allowConsumerTeams = outlets[0] ? outlets[0].allow_consumer_teams : null
  const allowGlobalConsumers = outlets[0] ? outlets[0].allow_global_consumers : true
  const hasConsumerTeamFilter = allowConsumerTeams !== null || !allowGlobalConsumers

  return dagIds.filter((dagId) => {
    const consumerTeam = teamOf.get(dagId)
    let producerPass = false
    if (consumerTeam === undefined) producerPass = true
    else if (sourceTeams.size === 0) producerPass = allowGlobal.get(dagId) ?? true
    else if (sourceTeams.has(consumerTeam)) producerPass = true
    else if ((allowTeams.get(dagId) ?? []).some((team) => sourceTeams.has(team))) producerPass = true
    if (!producerPass) return false
    if (hasConsumerTeamFilter) {
      if (consumerTeam === undefined) {
        if (!allowGlobalConsumers) return false
      } else if (!sourceTeams.has(consumerTeam)) {
        if (allowConsumerTeams !== null && !allowConsumerTeams.includes(consumerTeam)) return false
      }
    }

    return true
  })
}

/** `AssetManager._queue_dagruns` on PostgreSQL, per release. */
async function queueDagruns(
  trx: Knex.Transaction,
  schema: AirflowSchema,
  ti: LockedTi,
  assetId: number,
  eventId: number,
  dagIds: string[],
  partitionKey: string | null,
): Promise<void> {
  let targets = dagIds
  if (schema.capabilities.partitionedTimetables && targets.length > 0) {
    const {rows} = await trx.raw<{rows: Array<{dag_id: string}>}>(
      `select dag_id from dag where dag_id = any(?) and timetable_partitioned`,
      [targets],
    )
    const partitioned = new Set(rows.map((r) => r.dag_id))
    // _queue_partitioned_dags: with a key, through the partition mapper (not transcribed: airlock
    // refuses those); without one, from 3.2, one Log row per event naming the listening DAGs (in
    // set order there; sorted here).
    const listening = targets.filter((d) => partitioned.has(d)).sort()
    if (listening.length > 0 && partitionKey === null && compareVersions(schema.behaviourVersion, '3.2.0') >= 0) {
      const msg =
        `Listening Dags are partition-aware but the run has no partition key (listening_dags=[${listening.map((d) => `'${d}'`).join(', ')}], ` +
        `asset_id=${assetId}, run_id=${ti.run_id}, dag_id=${ti.dag_id}, task_id=${ti.task_id})`
      // Log(event=…, extra=msg, task_instance=ti): the key, map index, try number, logical date; no owner.
      await trx.raw(
        `insert into log (dttm, dag_id, task_id, run_id, map_index, try_number, event, logical_date, owner, extra)
         values (clock_timestamp(), ?, ?, ?, ?, ?, 'missing partition key', ?, null, ?)`,
        [ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number, ti.logical_date, msg],
      )
    }
    // An event with a partition key queues no other DAG (#63848: `or partition_key is not None`).
    targets = partitionKey === null ? targets.filter((d) => !partitioned.has(d)) : []
  }

  for (const dagId of targets) {
    if (schema.capabilities.queueShape === 'per_event') {
      await trx.raw(
        `insert into asset_dag_run_queue (asset_id, target_dag_id, asset_event_id, created_at) values (?, ?, ?, clock_timestamp()) on conflict do nothing`,
        [assetId, dagId, eventId],
      )
    } else {
      // insert(AssetDagRunQueue).values(asset_id=…).on_conflict_do_nothing(); created_at is the
      // model default timezone.utcnow().
      await trx.raw(
        `insert into asset_dag_run_queue (asset_id, target_dag_id, created_at) values (?, ?, clock_timestamp()) on conflict do nothing`,
        [assetId, dagId],
      )
    }
  }
}
