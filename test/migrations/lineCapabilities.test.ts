import {describe, expect, it} from 'vitest'

import {fixtureVersions} from '../../src/worlds/fixtureSchema.js'
import {schemaOf} from '../support/complete.js'
import {createTestDatabase} from '../support/database.js'
import {lineCapabilities} from '../store/statementFiles.js'

/**
 * The statement files are written without a database, from one capability set per release line:
 * each must be what airlock detects on that line's fixture, or the files show SQL no database gets.
 */
describe('the statement files describe each line as airlock detects it', () => {
  it.each(fixtureVersions)('%s', async (line) => {
    const db = await createTestDatabase(line, 1)
    try {
      expect((await schemaOf(db.knex)).capabilities).toEqual(lineCapabilities[line])
    } finally {
      await db.drop()
    }
  })
})
