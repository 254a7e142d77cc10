import {describe, expect, it} from 'vitest'

import {expandOutputName} from '../../src/cli/outputName.js'
import {usageMessage} from '../support/usage.js'

describe('--output placeholders (a cron job writes a new file each run)', () => {
  const now = new Date('2026-12-04T03:15:07.412Z')

  it('{timestamp} is UTC in ISO basic form (no colons, sorts by time); {date} and {pid} too', () => {
    expect(expandOutputName('audit-{timestamp}.ndjson', '--output', now)).toBe('audit-20261204T031507Z.ndjson')
    expect(expandOutputName('/var/log/airlock/{date}/replay.ndjson', '--output', now)).toBe(
      '/var/log/airlock/2026-12-04/replay.ndjson',
    )
    expect(expandOutputName('x-{pid}.ndjson', '--output', now)).toBe(`x-${process.pid}.ndjson`)
  })

  it('a name without placeholders is kept as written', () => {
    expect(expandOutputName('findings.ndjson', '--output', now)).toBe('findings.ndjson')
  })

  it('an unknown placeholder is refused with the ones airlock knows, not written literally', () => {
    const message = usageMessage(() => expandOutputName('audit-{time}.ndjson', '--output', now))
    expect(message).toContain('{time} is not a placeholder')
    expect(message).toContain('{timestamp}')
    // Names an object carries by inheritance are not placeholders either.
    for (const inherited of ['{constructor}', '{__proto__}', '{toString}'])
      expect(usageMessage(() => expandOutputName(`x-${inherited}.ndjson`, '--output', now))).toContain(
        'not a placeholder',
      )
  })
})
