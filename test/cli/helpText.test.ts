import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {Config, Parser, type Command} from '@oclif/core'
import {Help} from '@oclif/core/help'
import {describe, expect, it} from 'vitest'

import {connectionFlags} from '../../src/cli/connectionFlags.js'
import AirlockHelp, {helpMargin} from '../../src/cli/help.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

// AirlockHelp skips EJS for strings without a tag and wraps plain ASCII itself (both for start-up
// time, see src/cli/help.ts): every page must read exactly as oclif's own help prints it.
class StockPages extends Help {
  page(command: Command.Loadable): string {
    return this.formatCommand(command)
  }

  rootPage(): string {
    return [this.formatRoot(), this.formatTopics(this.sortedTopics), this.formatCommands(this.sortedCommands)].join(
      '\n',
    )
  }
}

class AirlockPages extends AirlockHelp {
  page(command: Command.Loadable): string {
    return this.formatCommand(command)
  }

  rootPage(): string {
    return [this.formatRoot(), this.formatTopics(this.sortedTopics), this.formatCommands(this.sortedCommands)].join(
      '\n',
    )
  }
}

describe('help text', () => {
  // From 30 columns: below that oclif's own help fails (it wraps an example before rendering its tag).
  it("every command's page is oclif's own, then the exit codes, at widths 30 to 200", async () => {
    const config = await Config.load(root)
    const commands = config.commands.filter((command) => command.pluginName === config.name)
    expect(commands.length).toBeGreaterThan(10)
    for (const maxWidth of [30, 50, 80, 120, 200]) {
      // airlock asks oclif for helpMargin fewer columns, so the flag lines oclif runs past its width fit.
      const stock = new StockPages(config, {maxWidth: Math.max(30, maxWidth - helpMargin)})
      const airlock = new AirlockPages(config, {maxWidth})
      for (const command of commands) {
        const page = airlock.page(command)
        // The exit codes section is the page's last; its entries may wrap over several lines.
        const codes = page.lastIndexOf('\n\nEXIT CODES')
        expect(codes, `${command.id} at ${maxWidth}`).toBeGreaterThan(0)
        expect(page.slice(0, codes), `${command.id} at ${maxWidth}`).toBe(stock.page(command))
      }
      expect(airlock.rootPage(), `the root page at ${maxWidth}`).toBe(stock.rootPage())
    }
  })

  it('at 80 and 120 columns no line of any page is wider than the terminal, examples included', async () => {
    const config = await Config.load(root)
    const commands = config.commands.filter((command) => command.pluginName === config.name)
    for (const maxWidth of [80, 120]) {
      const airlock = new AirlockPages(config, {maxWidth})
      const pages: Array<[string, string]> = [
        ['the root page', airlock.rootPage()],
        ...commands.map((command): [string, string] => [command.id, airlock.page(command)]),
      ]
      for (const [name, page] of pages) {
        const wide = page.split('\n').filter((line) => line.length > maxWidth)
        expect(wide, `${name} at ${maxWidth}`).toEqual([])
      }
    }
  })

  it("every command's usage line nests its brackets and names a flag on each side of every |", async () => {
    const config = await Config.load(root)
    expect(config.commands.length).toBeGreaterThan(10)
    for (const maxWidth of [80, 200]) {
      const airlock = new AirlockPages(config, {maxWidth})
      for (const command of config.commands) {
        const page = airlock.page(command)
        const usage = page.slice(page.indexOf('USAGE\n'), page.indexOf('\n\n', page.indexOf('USAGE\n')))
        const name = `${command.id} at ${maxWidth}: ${usage}`
        expect(usage, name).toMatch(/^USAGE\n {2}\$ airlock /)
        expect(usage, name).not.toMatch(/\|\s*[\])]|[[(]\s*\||\|\s*\|/)
        let depth = 0
        for (const char of usage) {
          if (char === '[' || char === '(') depth++
          if (char === ']' || char === ')') depth--
          expect(depth, name).toBeGreaterThanOrEqual(0)
        }
        expect(depth, name).toBe(0)
      }
    }
  })

  it('the connection flags the usage line groups are refused together, in either order', async () => {
    const pairs = [
      ['--embedded', '--database-url', 'postgresql://h/airflow'],
      ['--embedded', '--profile', 'prod'],
      ['--embedded', '--env', 'prod'],
      ['--env', 'prod', '--embedded'],
      ['--profile', 'prod', '--env', 'prod'],
    ]
    for (const argv of pairs)
      await expect(Parser.parse(argv, {flags: connectionFlags}), argv.join(' ')).rejects.toThrow(
        /cannot also be provided/,
      )
    // --database-url overrides a profile rather than excluding it.
    await expect(
      Parser.parse(['--database-url', 'postgresql://h/airflow', '--profile', 'prod'], {flags: connectionFlags}),
    ).resolves.toBeDefined()
  })
})
