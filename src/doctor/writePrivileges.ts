import type {Database} from '../engine/engine.js'
import {AirlockError, doctorAction} from '../errors.js'
import {ExitCode} from '../exitCodes.js'
import {catalogFor} from '../store/openStore.js'
import type {PrivilegeCheck} from '../store/families/catalog.js'

/**
 * The privileges airlock's commands use, with the command that needs each, so doctor can say
 * what a role without them will not be able to do.
 */
export interface NeededPrivilege extends PrivilegeCheck {
  neededBy: string
}

const table = (object: string, privilege: PrivilegeCheck['privilege'], neededBy: string): NeededPrivilege => ({
  object: `public.${object}`,
  kind: 'table',
  privilege,
  neededBy,
})
const sequence = (object: string, neededBy: string): NeededPrivilege => ({
  object: `public.${object}`,
  kind: 'sequence',
  privilege: 'USAGE',
  neededBy,
})

export const neededPrivileges: readonly NeededPrivilege[] = [
  table('task_instance', 'SELECT', 'every command'),
  table('serialized_dag', 'SELECT', "complete, replay-events (the tasks' declared outlets)"),
  table('task_instance', 'UPDATE', 'complete, undo'),
  table('dag_run', 'SELECT', 'every command'),
  table('dag', 'SELECT', 'every command'),
  table('asset', 'SELECT', 'every command'),
  table('asset', 'INSERT', 'complete (alias events create missing assets)'),
  table('asset_event', 'INSERT', 'complete, replay-events, undo (an undone --fix puts its events back)'),
  table('asset_event', 'DELETE', 'audit-events --fix, undo'),
  table('asset_alias_asset_event', 'INSERT', 'complete, replay-events, undo'),
  table('asset_dag_run_queue', 'INSERT', 'complete, replay-events'),
  table('asset_dag_run_queue', 'UPDATE', 'complete, replay-events (queue upsert before 3.4)'),
  table('log', 'INSERT', 'complete, replay-events, audit-events --fix, undo'),
  table('log', 'UPDATE', 'complete --continue-run (the clear image undo reads)'),
  table('asset_dag_run_queue', 'DELETE', 'undo (the queue rows an undone write created)'),
  table('log', 'SELECT', 'undo (the audit rows it takes back)'),
  table('dag', 'UPDATE', 'audit-events --fix, undo (FOR SHARE on the consumer DAG rows needs it)'),
  // complete --continue-run: Airflow's clear of the failed downstream.
  table('task_instance_history', 'INSERT', 'complete --continue-run (archives the cleared tries)'),
  table('task_reschedule', 'SELECT', 'complete --continue-run (the cleared task instances)'),
  table('task_reschedule', 'DELETE', 'complete --continue-run (the cleared task instances)'),
  table('task_reschedule', 'INSERT', 'undo (the reschedules a --continue-run deleted)'),
  table('task_instance_history', 'DELETE', 'undo (the tries a --continue-run archived)'),
  table('dag_run', 'UPDATE', 'complete --continue-run (re-queues the run)'),
  sequence('asset_event_id_seq', 'complete, replay-events'),
  sequence('log_id_seq', 'complete, replay-events, audit-events --fix, undo'),
]

/**
 * The privileges `command` ('complete', 'complete --continue-run', 'replay-events', 'audit-events
 * --fix') needs, from the table above; 'complete --continue-run' needs complete's too.
 */
export function privilegesFor(command: string): NeededPrivilege[] {
  const wanted = command === 'complete --continue-run' ? ['complete', command] : [command]
  return neededPrivileges.filter((needed) => {
    if (needed.neededBy === 'every command') return true
    const commands = needed.neededBy
      .split('(')[0]!
      .split(',')
      .map((name) => name.trim())
    return commands.some((name) => wanted.includes(name))
  })
}

/** The commands that only read: what still works for a role without write privileges. */
export const readOnlyCommands = [
  'doctor',
  'export-events',
  'audit-events (without --fix)',
  'audit-locks',
  'complete --plan',
  'replay-events --plan',
]

/** Every privilege `command` needs, or exit 2 naming the missing ones (doctor shows them all). */
export async function requirePrivileges(db: Database, command: string): Promise<void> {
  const needed = privilegesFor(command)
  const results = await catalogFor(db).readTablePrivileges(db.executor, needed)
  const denied = needed.filter((_, index) => !results[index]!.granted)
  if (denied.length === 0) return
  throw new AirlockError(
    'PERMISSION_DENIED',
    ExitCode.usage,
    `${command} needs privileges this database user lacks: ${denied.map((p) => `${p.privilege} on ${p.object.replace(/^public\./, '')}`).join(', ')}. Nothing was written.`,
    [
      doctorAction('lists every privilege and the command that needs it.'),
      `Commands that only read still work: ${readOnlyCommands.join(', ')}.`,
    ],
  )
}
