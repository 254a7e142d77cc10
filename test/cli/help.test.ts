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
