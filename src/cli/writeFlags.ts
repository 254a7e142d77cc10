import {Flags} from '@oclif/core'

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
  yes: Flags.boolean({char: 'y', description: 'Do not ask for confirmation.', default: false, helpGroup: 'WRITING'}),
  actor: Flags.string({
    description:
      "Who is acting, recorded as the owner of the rows airlock writes to Airflow's audit log (default: the OS user).",
    helpGroup: 'WRITING',
  }),
  output: Flags.string({
    char: 'o',
    description:
      'Also write every item as one JSON line to this new file (the table on the terminal shows the first 50 and every problem). Never overwrites.',
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
