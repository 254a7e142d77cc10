import type {FixtureVersion} from '../../src/fixtures/fixtureSchema.js'

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${encodeURIComponent(database)}`
  return parsed.toString()
}

export const templateName = (runId: string, version: FixtureVersion) => `airlock_t${runId}_tpl_${version.replace('.', '_')}`
