import type {AuditLogStore, EventAuditStore} from './families/audit.js'
import type {CatalogStore} from './families/catalog.js'
import type {ClearStore} from './families/clear.js'
import type {DownstreamStore} from './families/downstream.js'
import type {EventStore} from './families/events.js'
import type {JobStore} from './families/jobs.js'
import type {LineageStore} from './families/lineage.js'
import type {RegistrationStore} from './families/registration.js'
import type {SelectionStore} from './families/selection.js'
import type {TaskInstanceStore} from './families/taskInstances.js'
import type {UndoStore} from './families/undo.js'
import type {StoreCapabilities} from './types.js'

/**
 * The port in front of an Airflow metadata database: one method per thing airlock reads or
 * writes, each taking the executor it runs on (the pool, or a transaction) and returning domain
 * rows. A store is built once per engine and capability set when the database is opened, so the
 * Airflow-version differences (partition keys, the queue's key, …) are settled there and no
 * caller passes a version flag. Every SQL statement of the product lives behind this interface.
 *
 * It is the sum of its families (`families/`, one per file of `postgres/`): a feature names the
 * families it uses, and only the places that open the database (the CLI, the benchmark) hold the
 * whole store.
 */
export type AirflowStore = StoreCapabilities &
  CatalogStore &
  TaskInstanceStore &
  RegistrationStore &
  DownstreamStore &
  LineageStore &
  AuditLogStore &
  SelectionStore &
  ClearStore &
  EventStore &
  EventAuditStore &
  UndoStore &
  JobStore
