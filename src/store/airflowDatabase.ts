import type {AirflowSchema} from '../airflow/schema.js'
import type {Database} from '../engine/engine.js'

/**
 * An Airflow database airlock can work on: its schema and the store built for it. `Store` names
 * the families of the store (store/families/) its holder uses: a feature takes
 * `AirflowDatabase<TaskInstanceStore & EventStore>`, and only what opens the database (the CLI,
 * the benchmark) holds `AirflowDatabase<AirflowStore>`, which every narrower one accepts.
 */
export interface AirflowDatabase<Store> {
  db: Database
  schema: AirflowSchema
  store: Store
}
