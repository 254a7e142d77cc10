import type {PrivilegeCheck} from '../store/airflowStore.js'

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
const sequence = (object: string, neededBy: string): NeededPrivilege => ({object: `public.${object}`, kind: 'sequence', privilege: 'USAGE', neededBy})

export const neededPrivileges: readonly NeededPrivilege[] = [
  table('task_instance', 'SELECT', 'every command'),
  table('serialized_dag', 'SELECT', "complete, replay-events (the tasks' declared outlets)"),
  table('task_instance', 'UPDATE', 'complete'),
  table('dag_run', 'SELECT', 'every command'),
  table('dag', 'SELECT', 'every command'),
  table('asset', 'SELECT', 'every command'),
  table('asset', 'INSERT', 'complete (alias events create missing assets)'),
  table('asset_event', 'INSERT', 'complete, replay-events'),
  table('asset_event', 'DELETE', 'audit-events --fix'),
  table('asset_alias_asset_event', 'INSERT', 'complete, replay-events'),
  table('asset_dag_run_queue', 'INSERT', 'complete, replay-events'),
  table('asset_dag_run_queue', 'UPDATE', 'complete, replay-events (queue upsert before 3.4)'),
  table('log', 'INSERT', 'complete, replay-events, audit-events --fix'),
  sequence('asset_event_id_seq', 'complete, replay-events'),
  sequence('log_id_seq', 'complete, replay-events, audit-events --fix'),
]

/** The privileges `command` ('complete', 'replay-events', 'audit-events --fix') needs, from the table above. */
export function privilegesFor(command: string): NeededPrivilege[] {
  return neededPrivileges.filter((needed) => {
    if (needed.neededBy === 'every command') return true
    const commands = needed.neededBy
      .split('(')[0]!
      .split(',')
      .map((name) => name.trim())
    return commands.includes(command)
  })
}

/** The commands that only read: what still works for a role without write privileges. */
export const readOnlyCommands = ['doctor', 'export-events', 'audit-events (without --fix)', 'audit-locks']
