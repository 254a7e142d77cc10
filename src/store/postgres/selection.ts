import type {TaskInstanceContext, TaskInstanceKey} from '../../airflow/taskInstance.js'
import type {TryEvidenceKind} from '../../airflow/tryEvidence.js'
import type {Executor} from '../../engine/engine.js'
import {Params, prepared, statement} from '../../engine/prepared.js'
import {
  rangeOfRuns,
  type MissingOutlets,
  type SelectedTaskInstance,
  type SelectionGroup,
  type TaskInstanceFilter,
  type UnknownSelectors,
} from '../families/selection.js'
import {eventOfThisTry, tryBegan, tryEarliest, tryEvidence, tryEvidenceKind, whereAll} from './fragments.js'
import type {SelectionStore} from '../families/selection.js'
import {keyedTaskInstanceOf, taskInstanceKeyOf, type KeyedTaskInstanceRow} from './rows.js'

/**
 * The FROM and WHERE of a task-instance selection, with its bound values. `runs`: only the task
 * instances of these runs (a page of a run_after range), instead of the range itself.
 */
function filtered(
  filter: TaskInstanceFilter,
  params: Params,
  keyset?: (params: Params) => string,
  runs?: ReadonlyArray<{dagId: string; runId: string}>,
): string {
  const joins: string[] = []
  const where: string[] = []
  if (runs) {
    // In the page's order (its ordinality), each run's task instances through ti_dag_run.
    joins.push(
      `join unnest(${params.add(runs.map((r) => r.dagId))}::text[], ${params.add(runs.map((r) => r.runId))}::text[]) with ordinality as page(dag_id, run_id, n)
         on page.dag_id = ti.dag_id and page.run_id = ti.run_id`,
    )
  } else if (filter.timeColumn === 'end_date') {
    if (filter.since) where.push(`ti.end_date >= ${params.add(filter.since)}::timestamptz`)
    if (filter.until) where.push(`ti.end_date < ${params.add(filter.until)}::timestamptz`)
  } else if (filter.since || filter.until) {
    joins.push('join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id')
    if (filter.since) where.push(`dr.run_after >= ${params.add(filter.since)}::timestamptz`)
    if (filter.until) where.push(`dr.run_after < ${params.add(filter.until)}::timestamptz`)
  }

  if (filter.dagId) where.push(`ti.dag_id = ${params.add(filter.dagId)}`)
  if (filter.runIds.length > 0) where.push(`ti.run_id = any(${params.add([...filter.runIds])}::text[])`)
  if (filter.taskIds.length > 0) where.push(`ti.task_id = any(${params.add([...filter.taskIds])}::text[])`)
  if (filter.mapIndex !== undefined) where.push(`ti.map_index = ${params.add(filter.mapIndex)}::int`)
  if (filter.states) {
    // A task instance with no state yet has a NULL state, which `= any` never matches.
    const named = `ti.state = any(${params.add(filter.states.filter((state) => state !== null))}::text[])`
    where.push(filter.states.includes(null) ? `(${named} or ti.state is null)` : named)
  }

  if (filter.missingEventsOnly) {
    // The task's active declared outlets, joined by hash: one read of the outlets for the whole
    // selection (as an EXISTS per task instance, the planner probed three indexes for each).
    joins.push(`join (
        select r.dag_id, r.task_id, array_agg(a.id) as asset_ids
          from task_outlet_asset_reference r
          join asset a on a.id = r.asset_id
          join asset_active aa on aa.name = a.name and aa.uri = a.uri
         group by r.dag_id, r.task_id) as outlets on outlets.dag_id = ti.dag_id and outlets.task_id = ti.task_id`)
    // An active declared outlet that this try has no event of (or may not have: unattributed).
    const missing = outletWhere('ti', `<> 'attributed'`)
    // The evidence only of a task instance that misses events, in a CASE, whose order the planner
    // keeps: as a filter of its own it was evaluated first, for every successful task instance
    // (its unattributed check reads every outlet's events again: 17.6 s instead of 6.7 s over
    // 190,000 task instances).
    where.push(
      filter.evidence
        ? `case when ${missing} then ${evidenceWhere('ti', params, filter.evidence)} else false end`
        : missing,
    )
  }

  // A stable hash of the id: N hosts taking shards 1/N … N/N split one backfill without overlap.
  if (filter.shard)
    where.push(
      `mod(abs(hashtext(ti.id::text)::bigint), ${params.add(filter.shard.count)}::int) = ${params.add(filter.shard.index - 1)}::int`,
    )
  if (keyset) where.push(keyset(params))
  return `from task_instance ti ${joins.join(' ')} ${whereAll(where)}`
}

/** The current try of task instance `ti` (a row alias). */
const tiTry = (ti: string) => ({
  dagId: `${ti}.dag_id`,
  runId: `${ti}.run_id`,
  taskId: `${ti}.task_id`,
  mapIndex: `${ti}.map_index`,
  tryNumber: `${ti}.try_number`,
})

/**
 * "An active declared outlet of `ti`'s try whose eventOfThisTry is `test`" (`<> 'attributed'`:
 * missing or maybe missing; `= 'none'`: missing; `= 'unattributed'`: maybe missing), over the
 * `outlets` that `filtered` joins.
 */
function outletWhere(ti: string, test: string): string {
  const state = eventOfThisTry({
    ...tiTry(ti),
    assetId: 'o.asset_id',
    earliest: tryEarliest(ti),
    start: `${ti}.start_date`,
  })
  return `exists (select 1 from unnest(outlets.asset_ids) as o(asset_id) where ${state} ${test})`
}

/**
 * The strongest evidence of how the try of task instance `ti` (a row alias) came to be success,
 * as its kind. It decides the outlets with no event of the try (`'none'`); an outlet whose event
 * may be this try's (`'unattributed'`) is `unattributed_event` on its own, whatever the try says:
 * one outlet's doubt never hides another's certain loss.
 */
const tryEvidenceOf = (ti: string) => tryEvidenceKind(tiTry(ti))

/**
 * "Some missing outlet of `ti`'s try has one of these kinds of evidence", outlet by outlet (see
 * tryEvidenceOf): an absent one takes the try's evidence, a doubtful one `unattributed_event`.
 * The try's evidence is read first (once), the outlets only when it is wanted.
 */
function evidenceWhere(ti: string, params: Params, kinds: readonly TryEvidenceKind[]): string {
  // A CASE keeps that order (the planner reorders an AND of subplans by their estimated cost).
  const absent = `case when ${tryEvidenceOf(ti)} = any(${params.add([...kinds])}::text[]) then ${outletWhere(ti, `= 'none'`)} else false end`
  return kinds.includes('unattributed_event') ? `(${absent} or ${outletWhere(ti, `= 'unattributed'`)})` : absent
}

/**
 * The active declared outlets of `ti`'s try with no event of it (eventOfThisTry), as JSON
 * [{id, name, doubtful}] in name order (`doubtful`: an event may be this try's), over the
 * `outlets` that `filtered` joins. One look at each outlet's events, for a selected row only.
 */
function missingOutletsOf(ti: string): string {
  const state = eventOfThisTry({
    ...tiTry(ti),
    assetId: 'o.asset_id',
    earliest: tryEarliest(ti),
    start: `${ti}.start_date`,
  })
  return `(select json_agg(json_build_object('id', a.id, 'name', a.name, 'doubtful', s.state = 'unattributed') order by a.name, a.id)
      from (select o.asset_id, ${state} as state from unnest(outlets.asset_ids) as o(asset_id) offset 0) as s
      join asset a on a.id = s.asset_id
     where s.state <> 'attributed')`
}

/**
 * One keyset page of the selection (WHERE id > last ORDER BY id LIMIT n): memory stays flat and
 * each page is an index range scan, however many task instances match.
 *
 * A missing-events selection is the exception: few task instances match, each only after probes
 * of its events, and its window is on end_date, which Airflow does not index. Ordered by id, the
 * page walked task_instance_pkey, fetching every row's heap page at random (3.1 s of a 5.5 s page
 * over a million task instances); behind OFFSET 0 the selection is planned on its own, as a
 * sequential scan with hashed lookups, and only its matches are sorted (1.4 s). Each such page
 * reads the table, so the caller takes them larger (scanPageSize).
 */
function selectTaskInstancePage() {
  return async (
    ex: Executor,
    filter: TaskInstanceFilter,
    after: string | undefined,
    limit: number,
  ): Promise<SelectedTaskInstance[]> => {
    const params = new Params()
    const from = filtered(filter, params, after === undefined ? undefined : (p) => `ti.id > ${p.add(after)}::uuid`)
    // A missing-events page says, per task instance, how its try came to be success and which
    // outlets miss their event (each decided on its own: absent, or doubtful).
    const columns = `ti.id, ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.state${filter.missingEventsOnly ? `, ${tryEvidenceOf('ti')} as evidence, ${missingOutletsOf('ti')} as missing_outlets` : ''}`
    const page = filter.missingEventsOnly
      ? `select s.* from (select ${columns} ${from} offset 0) as s order by s.id limit ${params.add(limit)}::int`
      : `select ${columns} ${from} order by ti.id limit ${params.add(limit)}::int`
    const rows = await ex.query<
      KeyedTaskInstanceRow & {
        state: string | null
        evidence?: TryEvidenceKind
        missing_outlets?: Array<{id: number; name: string; doubtful: boolean}> | null
      }
    >(statement(page, params.values))
    return rows.map((row) => ({
      ...keyedTaskInstanceOf(row),
      state: row.state,
      ...(row.evidence ? {evidence: row.evidence} : {}),
      ...(row.missing_outlets === undefined
        ? {}
        : {
            missingOutlets: (row.missing_outlets ?? []).map((o) => ({
              assetId: o.id,
              asset: o.name,
              doubtful: o.doubtful,
            })),
          }),
    }))
  }
}

/**
 * What a selection holds, by DAG, run and state, for the operator to see before a bulk write:
 * at most `maxGroups` groups in key order. With a limit, the groups are of the first `limit`
 * task instances in the order the pages take them (by id), so they describe what will be touched.
 */
function summarizeTaskInstances() {
  return async (
    ex: Executor,
    filter: TaskInstanceFilter & {limit?: number | undefined},
    maxGroups: number,
  ): Promise<SelectionGroup[]> => {
    const params = new Params()
    const from = filtered(filter, params)
    // With a limit, the first task instances in the order the pages take them.
    const order = rangeOfRuns(filter) ? 'dr.run_after, dr.id, ti.id' : 'ti.id'
    const source =
      filter.limit === undefined
        ? `select ti.dag_id, ti.run_id, ti.state ${from}`
        : `select ti.dag_id, ti.run_id, ti.state ${from} order by ${order} limit ${params.add(filter.limit)}::int`
    const rows = await ex.query<{dag_id: string; run_id: string; state: string | null; n: number}>(
      statement(
        `select s.dag_id, s.run_id, s.state, count(*)::int as n
           from (${source}) s
          group by s.dag_id, s.run_id, s.state
          order by s.dag_id, s.run_id, s.state
          limit ${params.add(maxGroups)}::int`,
        params.values,
      ),
    )
    return rows.map((row) => ({dagId: row.dag_id, runId: row.run_id, state: row.state, count: row.n}))
  }
}

/**
 * One keyset page of the runs of a run_after range, in (run_after, id) order: an index range scan
 * of Airflow's idx_dag_run_run_after, however large task_instance is. Their task instances are then
 * read run page by run page (selectTaskInstanceIdsOfRuns), so a range costs what it selects: a
 * single query ordered by task instance id instead walks task_instance_pkey, reading tens of
 * thousands of rows per page of a narrow range.
 */
function selectRunPage() {
  return async (
    ex: Executor,
    filter: TaskInstanceFilter,
    after: {runAfter: Date; id: number} | undefined,
    limit: number,
  ): Promise<Array<{id: number; dagId: string; runId: string; runAfter: Date}>> => {
    const params = new Params()
    const where: string[] = []
    if (filter.since) where.push(`dr.run_after >= ${params.add(filter.since)}::timestamptz`)
    if (filter.until) where.push(`dr.run_after < ${params.add(filter.until)}::timestamptz`)
    if (filter.dagId) where.push(`dr.dag_id = ${params.add(filter.dagId)}`)
    if (filter.runIds.length > 0) where.push(`dr.run_id = any(${params.add([...filter.runIds])}::text[])`)
    if (after)
      where.push(`(dr.run_after, dr.id) > (${params.add(after.runAfter)}::timestamptz, ${params.add(after.id)}::int)`)
    const rows = await ex.query<{id: number; dag_id: string; run_id: string; run_after: Date}>(
      statement(
        `select dr.id, dr.dag_id, dr.run_id, dr.run_after from dag_run dr ${whereAll(where)}
          order by dr.run_after, dr.id limit ${params.add(limit)}::int`,
        params.values,
      ),
    )
    return rows.map((row) => ({id: row.id, dagId: row.dag_id, runId: row.run_id, runAfter: row.run_after}))
  }
}

/** One keyset page of the task instances of a run page, in (run page order, id) order. */
function selectTaskInstanceIdsOfRuns() {
  return async (
    ex: Executor,
    filter: TaskInstanceFilter,
    runs: ReadonlyArray<{dagId: string; runId: string}>,
    after: {n: number; id: string} | undefined,
    limit: number,
  ): Promise<Array<{n: number; id: string; key: TaskInstanceKey}>> => {
    const params = new Params()
    const keyset =
      after === undefined
        ? undefined
        : (p: Params) => `(page.n, ti.id) > (${p.add(after.n)}::bigint, ${p.add(after.id)}::uuid)`
    const from = filtered(filter, params, keyset, runs)
    // The key too: an item that fails before its own read is still named by it.
    const rows = await ex.query<KeyedTaskInstanceRow & {n: string}>(
      statement(
        `select page.n, ti.id, ti.dag_id, ti.run_id, ti.task_id, ti.map_index ${from} order by page.n, ti.id limit ${params.add(limit)}::int`,
        params.values,
      ),
    )
    return rows.map((row) => ({
      n: Number(row.n),
      id: row.id,
      key: taskInstanceKeyOf(row),
    }))
  }
}

function countTaskInstances() {
  return async (ex: Executor, filter: TaskInstanceFilter): Promise<number> => {
    const params = new Params()
    const [row] = await ex.query<{n: string}>(
      statement(`select count(*) as n ${filtered(filter, params)}`, params.values),
    )
    return Number(row?.n ?? 0)
  }
}

function countTaskInstancesByState() {
  return async (ex: Executor, filter: TaskInstanceFilter): Promise<Array<{state: string | null; count: number}>> => {
    const params = new Params()
    const rows = await ex.query<{state: string | null; n: string}>(
      statement(
        `select ti.state, count(*) as n ${filtered(filter, params)} group by ti.state order by ti.state`,
        params.values,
      ),
    )
    return rows.map((row) => ({state: row.state, count: Number(row.n)}))
  }
}

/**
 * Which of the given (active, declared outlet) assets have no event of this task instance's try
 * (eventOfThisTry: none, or only one that may be this try's: `doubtful`): the events its last
 * successful try should have emitted; and the strongest evidence of how the try came to be
 * success (tryEvidence), which decides whether the absent ones were lost. A doubtful outlet is
 * decided on its own (`unattributed_event`): nothing can be told of it, which says nothing of the
 * others.
 * One statement, so the recheck under the row lock costs one round trip. `ignore` leaves out the
 * events and the log row this very transaction wrote (for that recheck).
 */
function readMissingOutlets() {
  const on = {dagId: '$2', runId: '$3', taskId: '$4', mapIndex: '$5::int', tryNumber: '$6::int'}
  const state = eventOfThisTry({
    ...on,
    assetId: 'a.asset_id',
    earliest: 'ti.earliest',
    began: 'ti.began',
    start: 'ti.start_date',
    extra: 'e.id <> all($7::int[])',
  })
  const missing = prepared(
    'missing_outlets',
    // materialized: read once, not inlined where each of its columns is read.
    `with ti as materialized (
       select ${tryEarliest('t')} as earliest, t.start_date, ${tryBegan(on)} as began from task_instance t
        where t.dag_id = $2 and t.run_id = $3 and t.task_id = $4 and t.map_index = $5::int
     ), outlets as (
       select a.asset_id, ${state} as state
         from unnest($1::int[]) as a(asset_id)
         left join ti on true
     ), missing as (
       select o.asset_id, o.state from outlets o where o.state <> 'attributed'
     )
     select (select coalesce(array_agg(m.asset_id order by m.asset_id), '{}') from missing m) as missing,
            (select coalesce(array_agg(m.asset_id order by m.asset_id), '{}') from missing m where m.state = 'unattributed') as doubtful,
            coalesce(ev.kind, 'unknown') as kind, ev.log_id, ev.event, ev.owner, ev.dttm
       from (select 1) as one left join lateral (${tryEvidence({...on, exceptLogId: '$8::int'})}) as ev on true`,
  )
  return async (
    ex: Executor,
    ti: TaskInstanceContext,
    assetIds: readonly number[],
    ignore: {eventIds: readonly number[]; logId: number | null} = {eventIds: [], logId: null},
  ): Promise<MissingOutlets> => {
    const [row] = await ex.query<{
      missing: number[]
      doubtful: number[]
      kind: TryEvidenceKind
      log_id: number | null
      event: string | null
      owner: string | null
      dttm: Date | null
    }>(
      missing([
        [...assetIds],
        ti.dagId,
        ti.runId,
        ti.taskId,
        ti.mapIndex,
        ti.tryNumber,
        [...ignore.eventIds],
        ignore.logId,
      ]),
    )
    if (!row) throw new Error('missing_outlets returned no row')
    const log = row.log_id === null ? null : {id: row.log_id, event: row.event ?? '', owner: row.owner, dttm: row.dttm}
    return {assetIds: row.missing, doubtful: row.doubtful, evidence: {kind: row.kind, log}}
  }
}

function readDagIds() {
  const dagIds = prepared('dag_ids', 'select dag_id from dag order by dag_id')
  return async (ex: Executor): Promise<string[]> =>
    (await ex.query<{dag_id: string}>(dagIds([]))).map((row) => row.dag_id)
}

/** Whether any event names the DAG as its source. */
function hasEventsFromDag() {
  const exists = prepared(
    'events_from_dag',
    'select exists (select 1 from asset_event where source_dag_id = $1) as found',
  )
  return async (ex: Executor, dagId: string): Promise<boolean> => {
    const [row] = await ex.query<{found: boolean}>(exists([dagId]))
    return row?.found ?? false
  }
}

/**
 * Which of the named run and task ids no task instance of the DAG carries (of any DAG without
 * one), with the ids a typo may have meant. Both checks ride the task_instance unique key
 * (dag_id, task_id, run_id, map_index) and dag_run's (dag_id, run_id); the candidates are read
 * only when a name is unknown, which is the error path.
 */
function readUnknownSelectors() {
  const unknownRuns = prepared(
    'unknown_run_ids',
    `select id from unnest($2::text[]) as named(id)
      where not exists (select 1 from dag_run d where d.run_id = named.id and ($1::text is null or d.dag_id = $1))`,
  )
  const unknownTasks = prepared(
    'unknown_task_ids',
    `select id from unnest($2::text[]) as named(id)
      where not exists (select 1 from task_instance t where t.task_id = named.id and ($1::text is null or t.dag_id = $1))`,
  )
  const runCandidates = prepared(
    'run_id_candidates',
    'select run_id as id from dag_run where $1::text is null or dag_id = $1 group by run_id limit 5000',
  )
  const taskCandidates = prepared(
    'task_id_candidates',
    'select task_id as id from task_instance where $1::text is null or dag_id = $1 group by task_id limit 5000',
  )
  const ids = (rows: Array<{id: string}>) => rows.map((row) => row.id)
  return async (
    ex: Executor,
    dagId: string | undefined,
    named: {runIds: readonly string[]; taskIds: readonly string[]},
  ): Promise<UnknownSelectors> => {
    const runs =
      named.runIds.length === 0
        ? []
        : ids(await ex.query<{id: string}>(unknownRuns([dagId ?? null, [...named.runIds]])))
    const tasks =
      named.taskIds.length === 0
        ? []
        : ids(await ex.query<{id: string}>(unknownTasks([dagId ?? null, [...named.taskIds]])))
    return {
      runIds: runs,
      taskIds: tasks,
      runCandidates: runs.length === 0 ? [] : ids(await ex.query<{id: string}>(runCandidates([dagId ?? null]))),
      taskCandidates: tasks.length === 0 ? [] : ids(await ex.query<{id: string}>(taskCandidates([dagId ?? null]))),
    }
  }
}

/** The selection family (no statement of it depends on the release). */
export function selectionStore(): SelectionStore {
  return {
    readMissingOutlets: readMissingOutlets(),
    selectTaskInstancePage: selectTaskInstancePage(),
    selectRunPage: selectRunPage(),
    selectTaskInstanceIdsOfRuns: selectTaskInstanceIdsOfRuns(),
    countTaskInstances: countTaskInstances(),
    countTaskInstancesByState: countTaskInstancesByState(),
    summarizeTaskInstances: summarizeTaskInstances(),
    readDagIds: readDagIds(),
    readUnknownSelectors: readUnknownSelectors(),
    hasEventsFromDag: hasEventsFromDag(),
  }
}
