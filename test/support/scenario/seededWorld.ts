import type {Knex} from 'knex'

import {seedWorld, type SeedOptions} from '../../../src/worlds/seed.js'

/**
 * The sandbox's seeded demo world (seedWorld), kept for tests written against it; the suite's own
 * tests use scenario() (builder.ts). Its special cases (etl_001.task_1's last outlet inactive, etl_001's
 * task_2 success and task_3 up_for_retry, report_NNN consumers with report_003 paused) live in the
 * seed, not in the test that relies on them: prefer scenario().
 */
export async function seed(knex: Knex, options: Partial<SeedOptions> = {}) {
  return knex.transaction((trx) => seedWorld(trx, {dags: 2, runs: 1, tasks: 3, outlets: 2, consumers: 3, ...options}))
}

/** Empties the world a writer test works on and seeds it again (sequences restart). */
export async function resetWorld(knex: Knex, options: Partial<SeedOptions> = {}) {
  await knex.raw(
    'truncate dag, dag_bundle, asset, asset_alias, log, log_template, asset_event, dag_run restart identity cascade',
  )
  return seed(knex, options)
}
