import path from 'node:path'

import {Flags} from '@oclif/core'

import type {WriteOptions} from '../batch/prepared.js'
import {sendConcurrency} from '../lineage/outbox.js'
import {lineageSettings, type LineageSettings} from '../lineage/settings.js'
import {LineageSpool} from '../lineage/spool.js'
import {sandboxHome} from '../sandbox/sandbox.js'
import {parseDuration} from './parseInput.js'

/** The flags every batch writer shares (pacing, timeouts, dry run, confirmation, streaming. */
export const writeFlags = {
  concurrency: Flags.integer({
    description: 'Items in flight at once (one connection each).',
    default: 4,
    min: 1,
    max: 64,
    helpGroup: 'WRITING',
  }),
  'lock-timeout': Flags.string({
    description: 'SET LOCAL lock_timeout per transaction; a longer lock wait is retried, then reported failed.',
    default: '5s',
    helpGroup: 'WRITING',
  }),
  'statement-timeout': Flags.string({
    description: 'SET LOCAL statement_timeout per transaction.',
    default: '30s',
    helpGroup: 'WRITING',
  }),
  'dry-run': Flags.boolean({
    description: 'Run every transaction, then roll it back: reports exactly what would happen.',
    default: false,
    helpGroup: 'WRITING',
  }),
  plan: Flags.boolean({
    description:
      "A read-only plan for review: each item's outcome, events, consumers and downstream preview, decided on reads. Needs only SELECT; writes and locks nothing (the session is read-only).",
    default: false,
    exclusive: ['dry-run'],
    helpGroup: 'WRITING',
  }),
  yes: Flags.boolean({char: 'y', description: 'Do not ask for confirmation.', default: false, helpGroup: 'WRITING'}),
  actor: Flags.string({
    description:
      "Who is acting, recorded as the owner of the rows airlock writes to Airflow's audit log (default: the OS user).",
    helpGroup: 'WRITING',
  }),
  output: Flags.string({
    char: 'o',
    description:
      'Also write every item as one JSON line to this new file (the table on the terminal shows the first 50 and every problem). Never overwrites: for cron, put {timestamp} (UTC), {date} or {pid} in the name.',
    helpValue: 'FILE',
    helpGroup: 'OUTPUT',
  }),
  ndjson: Flags.boolean({
    description: 'Stream one JSON line per item ({"type":"item",…}), then {"type":"summary",…}.',
    exclusive: ['json'],
    helpGroup: 'OUTPUT',
  }),
}

export function timeoutsFromFlags(flags: {'lock-timeout': string; 'statement-timeout': string}): {
  lockTimeoutMs: number
  statementTimeoutMs: number
} {
  return {
    lockTimeoutMs: parseDuration(flags['lock-timeout'], '--lock-timeout'),
    statementTimeoutMs: parseDuration(flags['statement-timeout'], '--statement-timeout'),
  }
}

/**
 * What a task-instance writer reports beyond its writes: the downstream preview and the
 * OpenLineage COMPLETE of each committed item (complete, replay-events).
 */
export const outcomeFlags = {
  'openlineage-url': Flags.string({
    summary: 'Send each committed task instance an OpenLineage COMPLETE (default: OPENLINEAGE_URL).',
    description:
      "The OpenLineage backend (Marquez, DataHub, …) to send each committed item's COMPLETE RunEvent to, after its commit, as Airflow's OpenLineage provider would have: same run id as the worker's START, the dag run as parent, the assets airlock wrote as outputs. Default: OPENLINEAGE_URL (with OPENLINEAGE_ENDPOINT and OPENLINEAGE_API_KEY). A backend that is down or slow never fails or holds up a completion: events are sent beside the batch and the summary says what the backend confirmed. See docs/lineage.md.",
    helpGroup: 'OUTPUT',
  }),
  lineage: Flags.boolean({
    default: true,
    allowNo: true,
    summary: 'Send OpenLineage COMPLETE events when a backend is configured (--no-lineage: never).',
    helpGroup: 'OUTPUT',
  }),
  'lineage-spool': Flags.string({
    summary: 'Where COMPLETE events wait until the backend confirms them (default: $AIRLOCK_HOME/lineage-spool).',
    description:
      'One file per event, written before the first attempt to send it and removed once the backend confirmed it: what is left was never confirmed, and `airlock lineage resend` sends it.',
    helpGroup: 'OUTPUT',
    helpValue: 'DIR',
  }),
  'lineage-wait': Flags.string({
    summary: 'After the last completion, how long to wait for COMPLETE events still being sent (500ms, 10s, 2m).',
    description: `Events are sent alongside the completions (${sendConcurrency} at a time), never holding them up. When the wait ends, what is still queued stays in the spool (not delivered) and what is in flight is cut short (maybe delivered once its body went out); the summary counts them and names the \`airlock lineage resend\` line that sends them.`,
    default: '10s',
    helpGroup: 'OUTPUT',
    helpValue: 'DURATION',
  }),
  'lineage-required': Flags.boolean({
    summary: 'Exit 5 when a COMPLETE event was not confirmed by the backend (for cron); it stays in the spool.',
    default: false,
    helpGroup: 'OUTPUT',
  }),
  downstream: Flags.boolean({
    default: true,
    allowNo: true,
    summary: 'Show which consumer DAGs each item starts (--no-downstream: skip it).',
    description:
      'Per item, which consumer DAGs its events reach and whether each will run once it commits (their asset condition against their queue rows; paused, stale, import errors, max_active_runs), read before the row lock by the statement that queues its consumers. --no-downstream skips that read, for a bulk run where every bit of completions per second matters.',
    helpGroup: 'OUTPUT',
  }),
}

/**
 * Where COMPLETE events go, read before connecting: a malformed URL, or a spool that cannot be
 * one, is exit 2 before anything is written. `sends`: the run will send events (not a dry run,
 * not a plan, not a replay without --lineage-for-replays), so its spool is checked now.
 */
export async function lineageFromFlags(
  flags: {
    'openlineage-url'?: string | undefined
    lineage: boolean
    'lineage-spool'?: string | undefined
    'lineage-wait': string
    'lineage-required': boolean
  },
  sends: boolean,
): Promise<LineageSettings> {
  const settings = await lineageSettings({
    openlineageUrl: flags['openlineage-url'],
    lineage: flags.lineage,
    delivery: {
      spoolDir: lineageSpoolDir(flags['lineage-spool']),
      waitMs: parseDuration(flags['lineage-wait'], '--lineage-wait', 24 * 3_600_000),
      required: flags['lineage-required'],
    },
  })
  if (settings.enabled && sends) await LineageSpool.open(settings.delivery.spoolDir)
  return settings
}

/**
 * The pooled connections the lineage outbox needs beside the batch's: one, on which it builds each
 * event after its commit, so no completion waits for a connection while it does.
 */
export function lineagePoolShare(settings: LineageSettings, sends: boolean): number {
  return settings.enabled && sends ? 1 : 0
}

/** --lineage-spool, else the spool under airlock's home (AIRLOCK_HOME). */
export function lineageSpoolDir(flag: string | undefined): string {
  return flag ? path.resolve(flag) : path.join(sandboxHome(), 'lineage-spool')
}

/** The batch's write options from the flags: --plan is a dry run that writes nothing at all. */
export function writeOptionsFromFlags(flags: {
  'lock-timeout': string
  'statement-timeout': string
  concurrency: number
  'dry-run': boolean
  plan: boolean
}): WriteOptions {
  return {
    ...timeoutsFromFlags(flags),
    concurrency: flags.concurrency,
    dryRun: flags['dry-run'] || flags.plan,
    plan: flags.plan,
  }
}
