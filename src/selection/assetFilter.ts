import {AirlockError} from '../errors.js'
import {ExitCode} from '../exitCodes.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import type {RegistrationStore} from '../store/families/registration.js'

/**
 * Every asset an event filter names an asset (by its name or its uri); one that names
 * none is a typo, exit 4, never a "clean" run that read nothing (a monitoring cron would report
 * it as healthy).
 */
export async function requireAssets(
  airflow: Pick<AirflowDatabase<RegistrationStore>, 'db' | 'store'>,
  assets: readonly string[],
  /** How the caller names the filter, for the message (the command line: --asset). */
  name = 'the asset filter',
): Promise<void> {
  if (assets.length === 0) return
  const {db, store} = airflow
  const found = await store.findAssetsByNameOrUri(db.executor, [...new Set(assets)])
  const unknown = assets.filter((asset) => !found.has(asset))
  if (unknown.length === 0) return
  throw new AirlockError(
    'NOT_FOUND',
    ExitCode.notFound,
    `No asset has the name or uri ${unknown.map((asset) => JSON.stringify(asset)).join(', ')}`,
    [`Check ${name} (an asset name, or its uri); nothing was read or written.`],
  )
}
