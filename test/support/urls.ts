import type {FixtureVersion} from '../../src/worlds/fixtureSchema.js'

export {withDatabase} from '../../src/connection/url.js'

export const templateName = (runId: string, version: FixtureVersion) =>
  `airlock_t${runId}_tpl_${version.replace('.', '_')}`
