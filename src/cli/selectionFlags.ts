import {Flags} from '@oclif/core'

import type {TaskInstanceKey} from '../airflow/taskInstance.js'
import type {SelectionRequest} from '../selection/itemSource.js'
import type {SelectorNames} from '../selection/selectorNames.js'
import {checkRange, parseShard, parseTaskInstanceRef, parseWindowBound} from './parseInput.js'

/** PostgreSQL's integer: numbers beyond it are refused before any query (not by the server, in SQL's words). */
export const maxInt4 = 2_147_483_647

/**
 * For scripts that must tell "nothing matched" from "done": every command that selects takes it.
 * Without it an empty selection is exit 0 (a cron's quiet night), said in a warning.
 */
export const failIfEmptyFlag = {
  'fail-if-empty': Flags.boolean({
    description:
      'Exit 4 when the selection is empty (nothing matched), for scripts that must know; without it an empty selection is exit 0 with a warning.',
    default: false,
    helpGroup: 'SELECTION',
  }),
}

/** The selection flags, shared by every command that works on task instances. */
export const selectionFlags = {
  'ti-id': Flags.string({
    description:
      'A task instance: its id (task_instance.id, a UUID), or its key dag_id/run_id/task_id[map_index], which names the current try even after a clear changed the id. Repeatable.',
    multiple: true,
    helpGroup: 'SELECTION',
  }),
  'dag-id': Flags.string({description: 'Task instances of this DAG.', helpGroup: 'SELECTION'}),
  'run-id': Flags.string({
    description: 'Task instances of this dag run (run_id). Repeatable.',
    multiple: true,
    helpGroup: 'SELECTION',
  }),
  'task-id': Flags.string({
    description: 'Task instances of this task. Repeatable.',
    multiple: true,
    helpGroup: 'SELECTION',
  }),
  'map-index': Flags.integer({
    description: 'Only this map index (-1 for unmapped tasks).',
    min: -1,
    max: maxInt4,
    helpGroup: 'SELECTION',
  }),
  since: Flags.string({
    description:
      'Runs whose run_after (logical date of scheduled runs) is at or after this ISO-8601 UTC time, or this long ago (90m, 26h, 7d).',
    helpGroup: 'SELECTION',
  }),
  until: Flags.string({
    description: 'Runs whose run_after is before this ISO-8601 UTC time, or this long ago (90m, 26h, 7d).',
    helpGroup: 'SELECTION',
  }),
  'from-file': Flags.string({
    description:
      'NDJSON of task instances, "-" for stdin: {"ti_id"} or {"dag_id","run_id","task_id","map_index"} per line, optionally with "outlet_events":[{"asset","extra","alias"}].',
    helpGroup: 'SELECTION',
  }),
  'all-dags': Flags.boolean({
    description:
      'Mean it: a filter without --dag-id (only --since/--until, --task-id, --run-id) selects across every DAG.',
    default: false,
    helpGroup: 'SELECTION',
  }),
  limit: Flags.integer({
    description: 'At most this many task instances.',
    min: 1,
    max: maxInt4,
    helpGroup: 'SELECTION',
  }),
  shard: Flags.string({
    description: 'K/N: only the K-th of N hash partitions, so N hosts can share one backfill without overlap.',
    helpGroup: 'SELECTION',
  }),
  ...failIfEmptyFlag,
}

export interface SelectionFlagValues {
  'ti-id'?: string[] | undefined
  'dag-id'?: string | undefined
  'run-id'?: string[] | undefined
  'task-id'?: string[] | undefined
  'map-index'?: number | undefined
  since?: string | undefined
  until?: string | undefined
  'from-file'?: string | undefined
  limit?: number | undefined
  shard?: string | undefined
  'all-dags'?: boolean | undefined
  'fail-if-empty'?: boolean | undefined
}

/** The flag of each part of a selection: what the selection's messages name (it speaks of meanings, the CLI of flags). */
export const selectorFlags: SelectorNames = {
  tiId: '--ti-id',
  fromFile: '--from-file',
  dagId: '--dag-id',
  runId: '--run-id',
  taskId: '--task-id',
  mapIndex: '--map-index',
  since: '--since',
  until: '--until',
  allDags: '--all-dags',
  shard: '--shard',
  dryRun: '--dry-run',
  states: '--from-state',
}

export function selectionFromFlags(flags: SelectionFlagValues): SelectionRequest {
  const since = flags.since ? parseWindowBound(flags.since, '--since') : undefined
  const until = flags.until ? parseWindowBound(flags.until, '--until') : undefined
  checkRange(since, until)
  return {
    allDags: flags['all-dags'] ?? false,
    names: selectorFlags,
    ...namedTaskInstances(flags['ti-id'] ?? []),
    fromFile: flags['from-file'],
    filter: {
      dagId: flags['dag-id'],
      runIds: flags['run-id'] ?? [],
      taskIds: flags['task-id'] ?? [],
      mapIndex: flags['map-index'],
      since,
      until,
      limit: flags.limit,
      shard: flags.shard ? parseShard(flags.shard) : undefined,
    },
  }
}

/** --ti-id values split into ids and keys (dag_id/run_id/task_id[map_index]). */
function namedTaskInstances(values: readonly string[]): {tiIds: string[]; tiKeys: TaskInstanceKey[]} {
  const refs = values.map(parseTaskInstanceRef)
  return {
    tiIds: refs.flatMap((ref) => ('tiId' in ref ? [ref.tiId] : [])),
    tiKeys: refs.flatMap((ref) => ('key' in ref ? [ref.key] : [])),
  }
}
