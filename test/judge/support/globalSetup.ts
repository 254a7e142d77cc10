import knexFactory from 'knex'
import type {TestProject} from 'vitest/node'

import {startSuiteServer, teardown as baseTeardown} from '../../support/globalSetup.js'
import {withDatabase} from '../../support/urls.js'
import {installedReleases, migrate, releases} from './airflow.js'
import {airflowTemplateName, upgradedTemplateName} from './databases.js'

/**
 * The suite's server and fixture templates, then one template per installed Airflow release made
 * by that release's own `airflow db migrate`: each test clones the release's database instead of
 * migrating its own. A release not installed is named, and its tests are skipped.
 */
export async function setup(project: TestProject): Promise<void> {
  const {adminUrl, runId, kind} = await startSuiteServer()
  project.provide('adminUrl', adminUrl)
  project.provide('runId', runId)
  project.provide('serverKind', kind)

  const missing = releases().filter((release) => !release.installed)
  if (missing.length > 0) {
    process.stderr.write(
      `airlock judge lane: not installed, skipped: ${missing.map((r) => r.version).join(', ')} (scripts/airflow/install.sh installs them)\n`,
    )
  }
  const admin = knexFactory({client: 'pg', connection: adminUrl, pool: {min: 0, max: 1}})
  try {
    const installed = installedReleases()
    for (const release of installed) {
      const name = airflowTemplateName(runId, release.version)
      const started = Date.now()
      await admin.raw('create database ??', [name])
      await migrate(release, withDatabase(adminUrl, name))
      process.stderr.write(
        `airlock judge lane: Airflow ${release.version} installed fresh in ${Date.now() - started} ms\n`,
      )
    }
    // The upgrade route: the oldest release's fresh database, migrated by each newer release, as
    // an operator's database reaches it (Airflow's migration files run, not its models).
    const [oldest, ...newer] = installed
    for (const release of newer) {
      const name = upgradedTemplateName(runId, release.version)
      const started = Date.now()
      await admin.raw('create database ?? template ??', [name, airflowTemplateName(runId, oldest!.version)])
      await migrate(release, withDatabase(adminUrl, name))
      process.stderr.write(
        `airlock judge lane: Airflow ${oldest!.version} upgraded to ${release.version} in ${Date.now() - started} ms\n`,
      )
    }
  } finally {
    await admin.destroy()
  }
}

export const teardown = baseTeardown
