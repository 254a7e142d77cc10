import type {Capabilities} from '../../airflow/schema.js'
import type {AirflowStore} from '../airflowStore.js'
import {auditLogStore} from './auditLog.js'
import {postgresCatalog} from './catalog.js'
import {clearStore} from './clear.js'
import {downstreamPreview} from './downstream.js'
import {eventAuditStore} from './eventAudit.js'
import {eventStore} from './events.js'
import {downstreamStore} from './explain.js'
import {jobStore} from './jobs.js'
import {lineageStore} from './lineage.js'
import {registrationStore} from './registration.js'
import {selectionStore} from './selection.js'
import {taskInstanceStore} from './taskInstance.js'
import {undoStore} from './undo.js'

/**
 * The PostgreSQL store for one capability set: every statement whose text depends on the Airflow
 * version is chosen here, once, and prepared statements get names that follow their text. Each
 * file of this folder builds its family; this composes them.
 */
export function postgresStore(capabilities: Capabilities): AirflowStore {
  // The downstream preview's SQL and its cache of conditions: a write's queue statement and the
  // plan's read share them.
  const preview = downstreamPreview(capabilities)
  return {
    capabilities,
    ...postgresCatalog,
    ...taskInstanceStore(capabilities),
    ...registrationStore(capabilities, preview),
    ...lineageStore(),
    ...auditLogStore(),
    ...selectionStore(),
    ...clearStore(),
    ...eventStore(capabilities),
    ...eventAuditStore(capabilities),
    ...undoStore(capabilities),
    ...jobStore(),
    // Last: the statement files list what the store prepares in the order it builds them.
    ...downstreamStore(capabilities, preview),
  }
}
