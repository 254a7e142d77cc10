import {inject} from 'vitest'

import {createDatabase, type TestDatabase} from '../../support/database.js'

export const airflowTemplateName = (runId: string, version: string) =>
  `airlock_t${runId}_af_${version.replaceAll('.', '_')}`

export const upgradedTemplateName = (runId: string, version: string) => `${airflowTemplateName(runId, version)}_up`

/** A copy of `template` (a database name), with a pool of its own; dropped by drop(). */
export const cloneDatabase = (template: string): Promise<TestDatabase> => createDatabase(template, 2)

/** A fresh database in the state `airflow db migrate` of `version` leaves. */
export const airflowDatabase = (version: string): Promise<TestDatabase> =>
  cloneDatabase(airflowTemplateName(inject('runId'), version))

/**
 * A fresh database in the state the oldest installed release's `airflow db migrate`, followed by
 * `version`'s, leaves: the route an operator's database takes. The oldest release's own fresh one
 * for that release.
 */
export const upgradedDatabase = (version: string, oldest: string): Promise<TestDatabase> =>
  cloneDatabase(
    version === oldest ? airflowTemplateName(inject('runId'), version) : upgradedTemplateName(inject('runId'), version),
  )
