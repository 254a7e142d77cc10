import {AirlockError} from '../errors.js'
import {ExitCode} from '../exitCodes.js'
import {closeMatches} from '../input/closeMatches.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import type {SelectionStore} from '../store/families/selection.js'

/**
 * An event filter's source DAG names a DAG that exists, or one whose events remain after it was
 * deleted; anything else is a typo, exit 4 with the close matches, never a "clean" run that read
 * nothing (a monitoring cron would report it as healthy).
 */
export async function requireSourceDag(
  airflow: Pick<AirflowDatabase<SelectionStore>, 'db' | 'store'>,
  dagId: string,
): Promise<void> {
  const {db, store} = airflow
  const dagIds = await store.readDagIds(db.executor)
  if (dagIds.includes(dagId)) return
  // Only on this path, a typo's: without an index on source_dag_id it reads asset_event until a match.
  if (await store.hasEventsFromDag(db.executor, dagId)) return
  const close = closeMatches(dagId, dagIds)
  throw new AirlockError(
    'NOT_FOUND',
    ExitCode.notFound,
    `No DAG is named ${JSON.stringify(dagId)} and no event names it as its source${close.length > 0 ? `; did you mean ${close.join(', ')}?` : ''}`,
    ['Check the DAG id; nothing was read or written.'],
  )
}
