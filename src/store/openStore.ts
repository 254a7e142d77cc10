import type {Capabilities} from '../airflow/schema.js'
import type {Database} from '../engine/engine.js'
import type {AirflowStore, CatalogStore} from './airflowStore.js'
import {postgresCatalog} from './postgres/catalog.js'
import {postgresStore} from './postgres/postgresStore.js'

/** The catalog reads of the database's engine (what airlock needs before it knows the Airflow version). */
export function catalogFor(db: Database): CatalogStore {
  switch (db.engine) {
    case 'postgres':
      return postgresCatalog
  }
}

/** The store for the database's engine and the capabilities its schema has. */
export function storeFor(db: Database, capabilities: Capabilities): AirflowStore {
  switch (db.engine) {
    case 'postgres':
      return postgresStore(capabilities)
  }
}
