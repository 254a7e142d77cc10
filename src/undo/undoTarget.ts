import {type AuditRecord, type ClearImage, type QueueImageRow, withdrawLogEvent} from '../store/families/undo.js'

/**
 * What an audit row says airlock wrote, and what taking it back needs: read from the row's extra
 * (`airlock`, with the before-image `before` each writer records; docs/exit-codes-and-json.md).
 */
export type UndoTarget =
  /** `complete`: its events and the queue rows it created go, the task instance comes back. */
  | {
      kind: 'complete'
      record: AuditRecord
      command: string
      tiId: string
      tryNumber: number | null
      eventIds: number[]
      /** The row as the write read it (JSON as recorded: timestamps keep their microseconds). */
      taskInstance: Record<string, unknown>
      /** --continue-run: the task instances it cleared and the run it queued, as they were and as it left them. */
      clear?: ClearImage | undefined
    }
  /** `replay-events` (either mode): its events and the queue rows it created go. */
  | {kind: 'events'; record: AuditRecord; command: string; eventIds: number[]}
  /** `audit-events --fix`: the duplicates it removed come back. */
  | {
      kind: 'fix'
      record: AuditRecord
      command: string
      removedEvents: Array<Record<string, unknown>>
      /** The event each kept: the removed ones' extra is taken from it. */
      keptEventId: number
    }
  /**
   * `undo --withdraw-queued`: the queue rows it withdrew from a consumed write's events come back
   * (while that write's events are still there and unconsumed by those DAGs).
   */
  | {
      kind: 'withdrawal'
      record: AuditRecord
      command: string
      /** The withdrawn write's events (the consumer DAGs' locks are taken on them). */
      eventIds: number[]
      queueRows: QueueImageRow[]
    }
  /** Nothing airlock can take back; the outcome says why. */
  | {
      kind: 'refused'
      record: AuditRecord
      command: string | null
      outcome: 'not_airlock' | 'not_undoable'
      detail: string
    }

export interface QueueRow {
  dagId: string
  assetId: number
}

/** The command a withdrawal's audit row names. */
export const withdrawCommand = 'undo --withdraw-queued'

/** The before-image versions this airlock reads. */
const knownVersion = 1

export function undoTargetOf(record: AuditRecord, undoEvent: string): UndoTarget {
  const airlock = airlockExtra(record.extra)
  const refused = (outcome: 'not_airlock' | 'not_undoable', detail: string, command: string | null = null) => ({
    kind: 'refused' as const,
    record,
    command,
    outcome,
    detail,
  })
  if (!airlock || typeof airlock.command !== 'string')
    return refused(
      'not_airlock',
      `log row ${record.id} (event ${record.event ?? 'none'}) was not written by airlock: undo takes back airlock's own writes; a change Airflow made is changed back in Airflow (its task instance and run controls)`,
    )
  const command = airlock.command
  if (record.event === undoEvent || command === 'undo')
    return refused(
      'not_undoable',
      `log row ${record.id} is an undo: an undo is not undone. To write it again, run the command it took back (undo of log row ${String(airlock.undoes)})`,
      command,
    )
  const before = airlock.before
  if (typeof before !== 'object' || before === null)
    return refused(
      'not_undoable',
      `log row ${record.id} was written by airlock ${String(airlock.version)}, which did not record what undo needs (its before-image); take it back by hand: docs/undo.md`,
      command,
    )
  const image = before as Record<string, unknown>
  if (image.version !== knownVersion)
    return refused(
      'not_undoable',
      `log row ${record.id} records a before-image of version ${String(image.version)}, which this airlock does not read: use the airlock that wrote it (${String(airlock.version)}) or later`,
      command,
    )
  if (command === withdrawCommand && record.event === withdrawLogEvent)
    return {
      kind: 'withdrawal',
      record,
      command,
      eventIds: numbers(airlock.withdrawn_event_ids),
      queueRows: Array.isArray(image.queue_rows) ? (image.queue_rows as QueueImageRow[]) : [],
    }
  const eventIds = numbers(airlock.event_ids)
  if (command === 'replay-events') return {kind: 'events', record, command, eventIds}
  if (command === 'audit-events --fix')
    return {
      kind: 'fix',
      record,
      command,
      keptEventId: typeof airlock.kept_event_id === 'number' ? airlock.kept_event_id : 0,
      removedEvents: Array.isArray(image.removed_events)
        ? (image.removed_events as Array<Record<string, unknown>>)
        : [],
    }
  return completeTargetOf(record, command, image, eventIds)
}

/** A completion's target, or why its before-image cannot be put back. */
function completeTargetOf(
  record: AuditRecord,
  command: string,
  image: Record<string, unknown>,
  eventIds: number[],
): UndoTarget {
  const refused = (detail: string) => ({
    kind: 'refused' as const,
    record,
    command,
    outcome: 'not_undoable' as const,
    detail,
  })
  if (command !== 'complete' && command !== 'complete --continue-run')
    return refused(`log row ${record.id}: airlock ${command} writes nothing undo takes back`)
  const clear = clearImageOf(image.continue_run)
  if (clear && clear.taskInstances.some((t) => (t as {next_kwargs_set?: boolean}).next_kwargs_set === true))
    return refused(
      `log row ${record.id}: a task instance the clear took had a resume payload (next_kwargs), which airlock does not record; undo cannot put it back`,
    )
  const taskInstance = image.task_instance as Record<string, unknown> | undefined
  if (!taskInstance || typeof taskInstance.id !== 'string')
    return refused(`log row ${record.id}: its before-image names no task instance`)
  if (taskInstance.next_kwargs_set === true)
    return refused(
      `log row ${record.id}: the task instance was deferred with a resume payload (next_kwargs), which airlock does not record (it may hold secrets); undo cannot put it back`,
    )
  if (typeof image.task_state_cleared === 'number' && image.task_state_cleared > 0)
    return refused(
      `log row ${record.id}: the completion cleared ${image.task_state_cleared} task state key(s) ([state_store] clear_on_success), whose values airlock does not record; undo cannot put them back`,
    )
  return {
    kind: 'complete',
    record,
    command,
    tiId: taskInstance.id,
    tryNumber: typeof taskInstance.try_number === 'number' ? taskInstance.try_number : record.tryNumber,
    eventIds,
    taskInstance,
    clear,
  }
}

/** The clear's image, when --continue-run cleared something (nothing cleared: nothing recorded). */
function clearImageOf(value: unknown): ClearImage | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const image = value as Record<string, unknown>
  const left = image.left as Record<string, unknown> | undefined
  if (!Array.isArray(image.task_instances) || !left || !Array.isArray(left.task_instances)) return undefined
  return {
    taskInstances: image.task_instances as unknown[],
    reschedules: Array.isArray(image.task_reschedules) ? (image.task_reschedules as unknown[]) : [],
    dagRun: image.dag_run,
    left: {taskInstances: left.task_instances as unknown[], dagRun: left.dag_run},
  }
}

function airlockExtra(extra: string | null): Record<string, unknown> | undefined {
  if (!extra) return undefined
  try {
    const parsed: unknown = JSON.parse(extra)
    if (typeof parsed !== 'object' || parsed === null) return undefined
    const airlock = (parsed as Record<string, unknown>).airlock
    return typeof airlock === 'object' && airlock !== null ? (airlock as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

const numbers = (value: unknown): number[] =>
  Array.isArray(value) ? value.filter((v): v is number => typeof v === 'number') : []
