import {fixOutcomes} from '../audit/prepareDuplicateFix.js'
import {completeOutcomes} from '../complete/completeWriter.js'
import type {ExitCode} from '../exitCodes.js'
import {replayOutcomes} from '../replay/prepareReplay.js'
import {dryRunOutcomeNames} from '../report/itemJson.js'
import {undoOutcomes} from '../undo/prepareUndo.js'
import {exitCodeMeanings, exitCodesOf} from './help.js'

/**
 * The parts of each command's page in docs/ that `--help` also says: its flags (from the oclif
 * manifest) and its exit codes and item outcomes (from the tables the code decides them by). Each
 * is a block between two markers that `npm run docs:commands` rewrites and test/docs/commandPages
 * checks, so a page cannot drift from the command; the prose around the blocks is the page's own.
 */

/** A flag as the oclif manifest (oclif.manifest.json) records it: the fields a page shows. */
export interface ManifestFlag {
  name: string
  type: 'boolean' | 'option'
  char?: string
  summary?: string
  description?: string
  default?: unknown
  env?: string
  helpGroup?: string
  helpValue?: string
  options?: readonly string[]
  multiple?: boolean
  allowNo?: boolean
  hidden?: boolean
}

export interface ManifestCommand {
  flags: Record<string, ManifestFlag>
}

export type BlockKind = 'flags' | 'outcomes'

/** The commands without a page: oclif's own help and version. */
const pageless = new Set(['help', 'version'])

/** The page a command's blocks are on: its own, or its topic's (lineage, sandbox). */
export function pageOf(id: string): string | undefined {
  if (pageless.has(id)) return undefined
  return `${id.split(':')[0]!}.md`
}

/** Each writer's outcome table: every outcome an item can end with, and the exit code it maps to. */
const itemOutcomes: Record<string, {title: string; outcomes: Readonly<Record<string, ExitCode>>}> = {
  complete: {title: 'item outcome', outcomes: completeOutcomes},
  'replay-events': {title: 'item outcome', outcomes: replayOutcomes},
  undo: {title: 'item outcome', outcomes: undoOutcomes},
  'audit-events': {title: '`--fix` outcome (a duplicate group)', outcomes: fixOutcomes},
}

/** A command id as typed: `lineage resend` for `lineage:resend`. */
const spoken = (id: string) => id.replaceAll(':', ' ')

/** Text for one cell of a Markdown table: on one line, its pipes escaped. */
function cell(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').replaceAll('|', '\\|')
}

const code = (text: string) => (text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``)

function flagName(flag: ManifestFlag): string {
  return code(flag.type === 'boolean' && flag.allowNo ? `--[no-]${flag.name}` : `--${flag.name}`)
}

/** What the flag takes: its choices, else its help value, else oclif's `<value>`. */
function flagValue(flag: ManifestFlag): string {
  if (flag.type === 'boolean') return ''
  const value = (flag.options ?? [flag.helpValue ?? '<value>']).map(code).join(', ')
  return flag.multiple ? `${value} (repeatable)` : value
}

/** The groups every command shares, after its own. */
const sharedGroups = ['OUTPUT', 'CONNECTION']

/**
 * The flags grouped as --help groups them: the command's own groups first, in the order each first
 * appears, then output and connection; within a group, as the command declares them (related
 * flags side by side, where --help sorts them by name).
 */
function grouped(flags: ManifestFlag[]): ManifestFlag[] {
  const groupOf = (flag: ManifestFlag) => flag.helpGroup ?? ''
  const appearing = [...new Set(flags.map(groupOf))]
  const groups = [...appearing.filter((group) => !sharedGroups.includes(group)), ...sharedGroups]
  return groups.flatMap((group) => flags.filter((flag) => groupOf(flag) === group))
}

function flagDefault(flag: ManifestFlag): string {
  if (flag.default === undefined || flag.type === 'boolean') return ''
  const values = Array.isArray(flag.default) ? flag.default : [flag.default]
  return values.map((value) => code(String(value))).join(', ')
}

/** The flags of one command, as `--help` lists them (a flag's summary first, its description after). */
export function flagsTable(command: ManifestCommand): string {
  const rows = grouped(Object.values(command.flags).filter((flag) => !flag.hidden)).map((flag) =>
    [
      flagName(flag),
      flag.char ? code(`-${flag.char}`) : '',
      flagValue(flag),
      flagDefault(flag),
      flag.env ? code(flag.env) : '',
      [flag.summary, flag.description].filter(Boolean).join(' '),
      flag.helpGroup ? flag.helpGroup.toLowerCase() : '',
    ]
      .map(cell)
      .join(' | '),
  )
  return [
    '| flag | short | value | default | environment | description | group |',
    '|---|---|---|---|---|---|---|',
    ...rows.map((row) => `| ${row} |`),
  ].join('\n')
}

/** The exit codes a command can end with and, for a writer, each item outcome's exit code. */
export function outcomesTables(id: string): string {
  const exits = [
    '| exit | meaning |',
    '|---|---|',
    ...exitCodesOf(id).map((exit) => `| ${exit} | ${cell(exitCodeMeanings[exit])} |`),
  ].join('\n')
  const items = itemOutcomes[id]
  if (!items) return exits
  const outcomes = [
    `| ${items.title} | exit |`,
    '|---|---|',
    ...Object.entries(items.outcomes).map(([outcome, exit]) => {
      const dryRun = dryRunOutcomeNames[outcome]
      return `| ${code(outcome)}${dryRun ? ` (${code(dryRun)} in a dry run or plan)` : ''} | ${exit} |`
    }),
  ].join('\n')
  return `${outcomes}\n\n${exits}`
}

const source: Record<BlockKind, string> = {
  flags: 'oclif.manifest.json',
  outcomes: "the command's exit codes and outcome tables",
}

/** The line that opens a block; its command and kind say what the generator writes into it. */
export function openingMarker(kind: BlockKind, id: string): string {
  return `<!-- ${kind}: ${spoken(id)}; generated by npm run docs:commands from ${source[kind]}; do not edit -->`
}

// A block's body is anything but another block's opening: a closing marker left out fails the
// page's check rather than taking the next block's body with it.
const blockPattern =
  /<!-- (flags|outcomes): ([a-z -]+); generated [^\n]*-->\n(?:(?:(?!<!-- (?:flags|outcomes): )[\s\S])*?\n)??<!-- \/\1 -->/g

/** The blocks a page holds, in order: which kind, for which command. */
export function blocksOf(page: string): Array<{kind: BlockKind; id: string}> {
  return [...page.matchAll(blockPattern)].map((match) => ({
    kind: match[1] as BlockKind,
    id: match[2]!.replaceAll(' ', ':'),
  }))
}

/**
 * The page with every block rewritten from the manifest and the outcome tables; the text outside
 * the blocks is left as it is. A block naming a command the manifest does not have is an error.
 */
export function renderCommandPage(page: string, commands: Readonly<Record<string, ManifestCommand>>): string {
  return page.replace(blockPattern, (_block, kind: BlockKind, name: string) => {
    const id = name.replaceAll(' ', ':')
    const command = commands[id]
    if (!command) throw new Error(`a ${kind} block names ${name}, which is no command of the manifest`)
    const body = kind === 'flags' ? flagsTable(command) : outcomesTables(id)
    return `${openingMarker(kind, id)}\n\n${body}\n\n<!-- /${kind} -->`
  })
}
