import type {Capabilities} from '../airflow/schema.js'
import type {Database, EngineName} from '../engine/engine.js'
import type {AirflowStore} from './airflowStore.js'
import type {CatalogStore} from './families/catalog.js'
import {postgresCatalog} from './postgres/catalog.js'
import {postgresStore} from './postgres/postgresStore.js'

/** The catalog reads of the database's engine (what airlock needs before it knows the Airflow version). */
export function catalogFor(db: Database): CatalogStore {
  // One case per engine (EngineName): PostgreSQL is the only one so far.
  const catalogs: Record<EngineName, CatalogStore> = {postgres: postgresCatalog}
  return catalogs[db.engine]
}

/** The store for the database's engine and the capabilities its schema has. */
export function storeFor(db: Database, capabilities: Capabilities): AirflowStore {
  const stores: Record<EngineName, (capabilities: Capabilities) => AirflowStore> = {postgres: postgresStore}
  return stores[db.engine](capabilities)
}
