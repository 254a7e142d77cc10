import type {AirflowSettings, Capabilities} from '../airflow/schema.js'
import type {Database} from '../engine/engine.js'
import {ExitCode} from '../exitCodes.js'
import {adviseOn, lockSettingNames, type SettingReport} from '../report/settingsAdvice.js'
import {catalogFor} from '../store/openStore.js'
import {checkAirflowSchema, type SchemaCheckOptions} from '../store/schemaCheck.js'
import {neededPrivileges, readOnlyCommands} from './writePrivileges.js'

export interface DoctorReport {
  connection: {target: string; source: string; user: string}
  server: {version: string; versionNum: number; canMonitor: boolean; tls: string | null}
  airflow: {
    supported: boolean
    alembicHead: string | null
    /** The placed release ('3.0.3–3.0.6', '3.1.8 (partly migrated)', '3.3.x (assumed; newer than 3.3.2)'). */
    version: string | null
    /** How the head was placed: the head of a release, a migration between releases, or --assume-version. */
    placement: 'release' | 'partly_migrated' | 'assumed' | 'development' | null
    /** The release whose behaviour airlock follows (the first release with this head). */
    behaviourVersion: string | null
    reason: string | null
    missing: string[]
    capabilities: Capabilities | null
    /** Airflow's own settings that change what a success writes, and where each was found. */
    airflowSettings: AirflowSettings | null
  }
  privileges: Array<{object: string; privilege: string; granted: boolean; neededBy: string}>
  settings: SettingReport[]
  verdict: string
}

export interface DoctorOutcome {
  report: DoctorReport
  exit: ExitCode
}

/** Everything an operator wants to know before pointing airlock at a database; writes nothing. */
export async function runDoctor(
  db: Database,
  connection: {target: string; source: string},
  options: SchemaCheckOptions = {},
): Promise<DoctorOutcome> {
  const catalog = catalogFor(db)
  const server = await catalog.readServerInfo(db.executor)
  const check = await checkAirflowSchema(db, options)
  const privileges = (await catalog.readTablePrivileges(db.executor, neededPrivileges)).map((result, index) => ({
    object: result.object.replace(/^public\./, ''),
    privilege: result.privilege,
    granted: result.granted,
    neededBy: neededPrivileges[index]!.neededBy,
  }))
  const settings = (await catalog.readSettings(db.executor, lockSettingNames)).map(adviseOn)

  const airflow = check.supported
    ? {
        supported: true,
        alembicHead: check.schema.alembicHead,
        version: check.schema.airflowVersion,
        placement: check.schema.placement,
        behaviourVersion: check.schema.behaviourVersion,
        reason: null,
        missing: [],
        capabilities: check.schema.capabilities,
        airflowSettings: check.schema.settings,
      }
    : {
        supported: false,
        alembicHead: check.alembicHead ?? null,
        version: null,
        placement: null,
        behaviourVersion: null,
        reason: check.reason,
        missing: check.missing,
        airflowSettings: null,
        capabilities: null,
      }

  const denied = privileges.filter((p) => !p.granted)
  let verdict: string
  if (!check.supported) {
    verdict = `unsupported: ${check.reason}.`
  } else if (denied.length > 0) {
    verdict = `read-only: Airflow ${airflow.version} on PostgreSQL ${server.version}, but ${server.currentUser} lacks ${denied.map((p) => `${p.privilege} on ${p.object}`).join(', ')} (see the privileges table). Still works: ${readOnlyCommands.join(', ')}.`
  } else {
    const caveat =
      check.schema.placement === 'partly_migrated'
        ? ' An upgrade stopped between releases: finish `airflow db migrate` before relying on airlock here.'
        : check.schema.placement === 'assumed'
          ? ' The alembic head is unknown to airlock and assumed by --assume-version; upgrade airlock when you can.'
          : check.schema.placement === 'development'
            ? ' No Airflow release airlock knows has this head: it is a development build.'
            : ''
    verdict = `ready: Airflow ${airflow.version} (${airflow.alembicHead}) on PostgreSQL ${server.version}; ${server.currentUser} can run every airlock command.${caveat}`
  }

  return {
    report: {
      connection: {target: connection.target, source: connection.source, user: server.currentUser},
      server: {version: server.version, versionNum: server.versionNum, canMonitor: server.canMonitor, tls: server.tls},
      airflow,
      privileges,
      settings,
      verdict,
    },
    exit: !check.supported ? ExitCode.unsupportedSchema : denied.length > 0 ? ExitCode.readOnly : ExitCode.ok,
  }
}
