import type {AirflowSchema} from '../airflow/schema.js'
import type {Database} from '../engine/engine.js'
import type {AirflowStore} from './airflowStore.js'

/** An Airflow database airlock can work on: its schema and the store built for it. */
export interface AirflowDatabase {
  db: Database
  schema: AirflowSchema
  store: AirflowStore
}
