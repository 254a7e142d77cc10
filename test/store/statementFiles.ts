import type {Capabilities} from '../../src/airflow/schema.js'
import {collectPrepared, type PreparedText} from '../../src/engine/prepared.js'
import type {FixtureVersion} from '../../src/worlds/fixtureSchema.js'
import {postgresStore} from '../../src/store/postgres/postgresStore.js'

/**
 * What each Airflow release line's database gets: the capability set airlock detects on a database
 * of that line (test/migrations/lineCapabilities.test.ts checks these against the fixture of each
 * line), with its settings at Airflow's defaults.
 */
const base = {
  eventPartitionKey: false,
  partitionedTimetables: false,
  maxRunsFlag: false,
  partitionStep: null,
  queueShape: 'per_asset',
  multiTeam: false,
  inletReferences: false,
  taskStateTable: null,
  consumerFilter: 'id_and_alias_skip_paused_and_stale',
  eventPartitionKeys: false,
  missingPartitionKeyLog: false,
  aliasAssetShape: 'bare',
  eventWindow: 'assets',
  teamFilter: false,
  clearTaskStateOnSuccess: false,
} as const satisfies Capabilities
const from32 = {
  ...base,
  inletReferences: true,
  eventPartitionKey: true,
  partitionedTimetables: true,
  maxRunsFlag: true,
  partitionStep: 'all_pending',
  consumerFilter: 'all_skip_paused',
  aliasAssetShape: 'declared',
  missingPartitionKeyLog: true,
  eventWindow: 'assets_and_aliases',
} as const
const from33 = {
  ...from32,
  multiTeam: true,
  partitionStep: 'fresh_active',
  taskStateTable: 'task_state_store',
  eventPartitionKeys: true,
  eventWindow: 'catchup_floor',
} as const

export const lineCapabilities: Record<FixtureVersion, Capabilities> = {
  '3.0': base,
  '3.1': {...base, inletReferences: true, eventWindow: 'assets_and_aliases'},
  '3.2': from32,
  '3.3': from33,
  '3.4': {...from33, queueShape: 'per_event'},
}

/** The settings that change a statement's text on a line, each as its own variant. */
function variants(capabilities: Capabilities): Array<{title: string; capabilities: Capabilities}> {
  const out = [{title: 'Airflow defaults', capabilities}]
  if (capabilities.multiTeam)
    out.push({title: '[core] multi_team = True', capabilities: {...capabilities, teamFilter: true}})
  if (capabilities.taskStateTable) {
    out.push({title: 'task state cleared on success', capabilities: {...capabilities, clearTaskStateOnSuccess: true}})
  }
  return out
}

const statementsOf = (capabilities: Capabilities): PreparedText[] =>
  collectPrepared(() => postgresStore(capabilities)).statements

const render = (statement: PreparedText) => `-- ${statement.name}\n${dedent(statement.text)};\n`

/** The text as written in the store, without the indentation of the code around it. */
function dedent(text: string): string {
  const lines = text.split('\n')
  const indents = lines
    .slice(1)
    .filter((line) => line.trim() !== '')
    .map((line) => line.length - line.trimStart().length)
  const cut = indents.length > 0 ? Math.min(...indents) : 0
  return [lines[0]!, ...lines.slice(1).map((line) => line.slice(Math.min(cut, line.length - line.trimStart().length)))]
    .map((line) => line.trimEnd())
    .join('\n')
}

/**
 * The file for one release line: every statement the store prepares on it with Airflow's default
 * settings, then, per setting that changes a text, only the statements it changes.
 */
export function statementFile(line: FixtureVersion): string {
  const [defaults, ...others] = variants(lineCapabilities[line])
  const known = statementsOf(defaults!.capabilities)
  const names = new Set(known.map((statement) => statement.name))
  const sections = [
    `-- Every statement airlock prepares on an Airflow ${line} database (${defaults!.title}).\n` +
      `-- Written by \`npm run statements\`; test/store/statementFiles.unit.test.ts fails when it is stale.\n` +
      `-- Capabilities: ${JSON.stringify(defaults!.capabilities)}\n`,
    ...known.map(render),
  ]
  for (const variant of others) {
    const changed = statementsOf(variant.capabilities).filter((statement) => !names.has(statement.name))
    if (changed.length === 0) continue
    sections.push(
      `-- ======== With ${variant.title}: the statements whose text changes ========\n`,
      ...changed.map(render),
    )
  }

  return sections.join('\n')
}
