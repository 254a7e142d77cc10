import {Flags} from '@oclif/core'

import {checkRange, parseWindowBound} from './parseInput.js'
import {failIfEmptyFlag} from './selectionFlags.js'

/** The event selection of export-events and audit-events: time window, source DAG, assets. */
export const eventFilterFlags = {
  since: Flags.string({
    description: 'Events at or after this ISO-8601 UTC time, or this long ago (90m, 26h, 7d).',
    helpGroup: 'SELECTION',
  }),
  until: Flags.string({
    description: 'Events before this ISO-8601 UTC time, or this long ago (90m, 26h, 7d).',
    helpGroup: 'SELECTION',
  }),
  'dag-id': Flags.string({description: 'Only events whose source DAG is this one.', helpGroup: 'SELECTION'}),
  asset: Flags.string({
    description: 'Only events of this asset (name or uri). Repeatable.',
    multiple: true,
    helpGroup: 'SELECTION',
  }),
  ...failIfEmptyFlag,
}

export function eventFilterFromFlags(flags: {
  since?: string | undefined
  until?: string | undefined
  'dag-id'?: string | undefined
  asset?: string[] | undefined
}) {
  const since = flags.since ? parseWindowBound(flags.since, '--since') : undefined
  const until = flags.until ? parseWindowBound(flags.until, '--until') : undefined
  checkRange(since, until)
  return {
    since,
    until,
    sourceDagId: flags['dag-id'],
    assets: flags.asset ?? [],
  }
}
