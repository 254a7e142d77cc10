import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'

import {beforeAll, describe, expect, it} from 'vitest'

/**
 * --since and --until take a time or a duration back from now (90m, 26h, 7d) in every command that
 * has them: each flag's help and each command's page must say both, so an operator who reads one
 * place does not take the duration for a cron-runbook secret.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

interface FlagHelp {
  description?: string
}

interface WindowFlags {
  since: FlagHelp
  until: FlagHelp
}

/**
 * The commands with --since, from the command classes themselves (what `npm run build` writes
 * into oclif.manifest.json), so this runs without a build. The id is oclif's: the path under
 * commands/, `/` read as `:`.
 */
async function windowCommands(): Promise<Array<[string, WindowFlags]>> {
  const dir = path.join(root, 'commands')
  const files = fs
    .readdirSync(dir, {recursive: true, encoding: 'utf8'})
    .filter((file) => file.endsWith('.ts'))
    .sort()
  const commands: Array<[string, WindowFlags]> = []
  for (const file of files) {
    const module = (await import(pathToFileURL(path.join(dir, file)).href)) as {
      default: {flags?: Record<string, FlagHelp>}
    }
    const flags = module.default.flags ?? {}
    const id = file.replace(/\.ts$/, '').split(path.sep).join(':')
    if (flags.since) commands.push([id, {since: flags.since, until: flags.until ?? {}}])
  }
  return commands
}

const duration = /\b(90m|26h|7d)\b/
const time = /ISO-8601/

/** Paragraphs and list items of a page, without its indented code blocks. */
function proseBlocks(page: string): string[] {
  return page
    .split(/\n\s*\n/)
    .flatMap((paragraph) => paragraph.split(/\n(?=- |\d+\. )/))
    .map((block) =>
      block
        .split('\n')
        .filter((line) => !line.startsWith('    '))
        .join('\n')
        .trim(),
    )
    .filter((block) => block !== '')
}

describe('--since and --until', () => {
  let commands: Array<[string, WindowFlags]> = []
  beforeAll(async () => {
    commands = await windowCommands()
  })

  it('are the flags of the commands that select by time', () => {
    expect(commands.map(([id]) => id).sort()).toEqual([
      'audit-events',
      'complete',
      'export-events',
      'lineage:resend',
      'replay-events',
      'undo',
    ])
  })

  it("each command's help names both forms", () => {
    for (const [id, flags] of commands) {
      for (const [name, flag] of Object.entries(flags)) {
        expect(flag.description, `${id} --${name}`).toMatch(time)
        expect(flag.description, `${id} --${name}`).toMatch(duration)
      }
    }
  })

  it("replay-events' help says the window is on end_date (its missing mode), not a run's run_after", () => {
    const replay = commands.find(([id]) => id === 'replay-events')![1]
    expect(replay.since.description).toContain('end_date')
    expect(replay.until.description).toContain('end_date')
    expect(replay.since.description).not.toContain('run_after')
  })

  it("each command's page, where it first describes them, names both forms", () => {
    for (const [id] of commands) {
      const page = fs.readFileSync(path.join(root, 'docs', `${id.split(':')[0]!}.md`), 'utf8')
      const first = proseBlocks(page).find((block) => block.includes('--since'))
      expect(first, `docs/${id}.md`).toBeDefined()
      expect(first, `docs/${id}.md`).toMatch(time)
      expect(first, `docs/${id}.md`).toMatch(duration)
    }
  })
})
