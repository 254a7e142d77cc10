import fs from 'node:fs'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {exitCodesOf} from '../../src/cli/help.js'
import {runCli} from '../support/cli.js'

/** Every command of the package, as oclif names them (commands/sandbox/start.ts → sandbox start). */
function commandIds(): string[][] {
  const ids: string[][] = []
  const walk = (dir: string, prefix: string[]) => {
    for (const entry of fs.readdirSync(dir, {withFileTypes: true})) {
      if (entry.isDirectory()) walk(path.join(dir, entry.name), [...prefix, entry.name])
      else if (entry.name.endsWith('.ts')) ids.push([...prefix, entry.name.replace(/\.ts$/, '')])
    }
  }
  walk(path.resolve('commands'), [])
  return ids.sort()
}

describe('--help', () => {
  it('every command page ends with the exit codes that command can return', async () => {
    // `airlock help --help` is the root page, which lists commands, not codes.
    const ids = commandIds().filter((id) => id.join(' ') !== 'help')
    expect(ids.length).toBeGreaterThan(10)
    for (const id of ids) {
      const result = await runCli([...id, '--help'])
      expect(result.code, id.join(' ')).toBe(0)
      const section = result.stdout.slice(result.stdout.lastIndexOf('EXIT CODES'))
      expect(result.stdout.lastIndexOf('EXIT CODES'), id.join(' ')).toBeGreaterThan(0)
      const listed = [...section.matchAll(/^ {2}(\d+) /gm)].map((match) => Number(match[1]))
      expect(listed, id.join(' ')).toEqual(exitCodesOf(id.join(':')))
    }
  })
})

describe('a mistyped command', () => {
  it('exits 2 at once with the nearest command on stderr, never a prompt, with stdin not a terminal', async () => {
    const started = Date.now()
    const result = await runCli(['complet', '--dag-id', 'etl', '--yes'])
    expect(result.code).toBe(2)
    expect(result.stdout).toBe('')
    expect(result.stderr).toBe(
      'Error: Unknown command "complet": did you mean complete?\n' +
        '  → airlock complete --help shows how to use it; airlock --help lists every command.\n',
    )
    // oclif's not-found plugin waits up to 10 s for an answer; nothing here waits for one.
    expect(Date.now() - started).toBeLessThan(8_000)
  })

  it('a command under a topic is suggested by its full name; --json gets the error envelope', async () => {
    const topic = await runCli(['sandbox', 'strat'])
    expect(topic.code).toBe(2)
    expect(topic.stderr).toContain('did you mean sandbox start')
    // `help` with a mistyped name: the same usage error, never "a bug in airlock".
    const help = await runCli(['help', 'complet'])
    expect(help.code).toBe(2)
    expect(help.stderr).toContain('did you mean complete?')
    expect((await runCli(['help', 'sandbx', 'start'])).stderr).toContain('did you mean sandbox start?')
    const json = await runCli(['complet', '--json'])
    expect(json.code).toBe(2)
    expect(JSON.parse(json.stdout)).toEqual({
      status: 2,
      error: {
        name: 'AirlockError',
        code: 'USAGE',
        message: 'Unknown command "complet": did you mean complete?',
        actions: ['airlock complete --help shows how to use it; airlock --help lists every command.'],
      },
    })
  })
})
