/**
 * knex's own tools (`npx knex --knexfile dist/knexfile.js migrate:latest --env NAME`) over the
 * built-in profiles of `airlock --profile NAME` (sandbox, test, pgenv). The only migrations here
 * are airlock's fixture migrations, which build an Airflow-shaped schema in a scratch database;
 * every connection this file opens refuses a database that holds a real Airflow schema, before
 * knex writes anything (its own bookkeeping included).
 */
import {fixtureKnexConfig} from './src/worlds/fixtureSchema.js'
import {environments} from './src/connection/environments.js'

export default Object.fromEntries(
  Object.entries(environments).map(([name, profile]) => [name, fixtureKnexConfig(profile.connection)]),
)
