import {describe, expect, it} from 'vitest'

import {resumeCommand, resumedOutputName} from '../../src/cli/resumeCommand.js'

describe('resumeCommand', () => {
  it("repeats the operator's words, quoted for a POSIX shell", () => {
    expect(resumeCommand('airlock', 'complete', ['--dag-id', 'etl', '--run-id', "manual__it's", '--yes'])).toEqual({
      command: `airlock complete --dag-id etl --run-id 'manual__it'\\''s' --yes`,
    })
    expect(resumeCommand('airlock', 'lineage:resend', ['--since', '1h']).command).toBe(
      'airlock lineage resend --since 1h',
    )
  })

  it.each([
    [
      ['--output', 'items.ndjson'],
      ['--output', "'items-{timestamp}.ndjson'"],
    ],
    [['--output=items.ndjson'], ["'--output=items-{timestamp}.ndjson'"]],
    [
      ['-o', 'items.ndjson'],
      ['-o', "'items-{timestamp}.ndjson'"],
    ],
    [['-oitems.ndjson'], ["'-oitems-{timestamp}.ndjson'"]],
    [['-o=items.ndjson'], ["'-o=items-{timestamp}.ndjson'"]],
  ])('an --output this run created is replaced by a new name: %j', (given, resumed) => {
    const line = resumeCommand('airlock', 'complete', ['--dag-id', 'etl', ...given, '--yes'], 'o')
    expect(line.command).toBe(`airlock complete --dag-id etl ${resumed.join(' ')} --yes`)
    expect(line.output).toEqual({was: 'items.ndjson', now: 'items-{timestamp}.ndjson'})
  })

  it('leaves what is not --output alone: another -o word, words after --, a command without the short form', () => {
    expect(resumeCommand('airlock', 'complete', ['--dag-id', '-o'], 'o').command).toBe('airlock complete --dag-id -o')
    expect(resumeCommand('airlock', 'x', ['--', '--output', 'a'], 'o')).toEqual({command: 'airlock x -- --output a'})
    expect(resumeCommand('airlock', 'x', ['-o', 'a'])).toEqual({command: 'airlock x -o a'})
  })
})

describe('resumedOutputName', () => {
  it.each([
    ['items.ndjson', 'items-{timestamp}.ndjson'],
    ['/var/log/airlock/items.ndjson', '/var/log/airlock/items-{timestamp}.ndjson'],
    ['./out/items', './out/items-{timestamp}'],
    ['/items.ndjson', '/items-{timestamp}.ndjson'],
    ['.items', '.items-{timestamp}'],
    ['events-{date}.ndjson', 'events-{date}-{timestamp}.ndjson'],
    ['run-{pid}.ndjson', 'run-{pid}-{timestamp}.ndjson'],
    // A name with {timestamp} is new every second already.
    ['audit-{timestamp}.ndjson', 'audit-{timestamp}.ndjson'],
  ])('%s → %s', (name, resumed) => {
    expect(resumedOutputName(name)).toBe(resumed)
  })
})
