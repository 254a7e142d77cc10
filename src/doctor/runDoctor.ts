import {AirflowConfigError} from '../airflow/config.js'
import {componentHealth, healthThresholds, type ComponentHealth} from '../airflow/jobHealth.js'
import type {AirflowSchema, AirflowSettings, Capabilities} from '../airflow/schema.js'
import type {Database} from '../engine/engine.js'
import {usageError} from '../errors.js'
import {ExitCode} from '../exitCodes.js'
import {adviseOn, lockSettingNames, type SettingReport} from '../report/settingsAdvice.js'
import type {ServerInfo} from '../store/families/catalog.js'
import {catalogFor, storeFor} from '../store/openStore.js'
import {checkAirflowSchema, type SchemaCheckOptions} from '../store/schemaCheck.js'
import {whyReadOnly} from './writableServer.js'
import {neededPrivileges, readOnlyCommands} from './writePrivileges.js'

export interface DoctorReport {
  connection: {target: string; source: string; user: string}
  server: {
    version: string
    versionNum: number
    canMonitor: boolean
    tls: string | null
    /** A transaction begun now may write (transaction_read_only off). */
    acceptsWrites: boolean
    /** A hot standby (pg_is_in_recovery()). */
    inRecovery: boolean
    /** Why it accepts no writes (a standby, default_transaction_read_only and where it is set); null when it does. */
    readOnlyReason: string | null
  }
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
    /**
     * Whether a scheduler and a DAG processor run, as Airflow's health check judges the job table
     * (src/airflow/jobHealth.ts). Information only: airlock needs neither. null when unsupported.
     */
    components: {scheduler: ComponentHealth; dag_processor: ComponentHealth} | null
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
  const access = await catalog.readWriteAccess(db.executor)
  const readOnlyReason = whyReadOnly(access) ?? null
  const check = await checkAirflowSchema(db, options)
  const privileges = (await catalog.readTablePrivileges(db.executor, neededPrivileges)).map((result, index) => ({
    object: result.object.replace(/^public\./, ''),
    privilege: result.privilege,
    granted: result.granted,
    neededBy: neededPrivileges[index]!.neededBy,
  }))
  const settings = (await catalog.readSettings(db.executor, lockSettingNames)).map(adviseOn)

  const components = check.supported ? await readComponents(db, check.schema) : null
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
        components,
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
        components: null,
      }

  const denied = privileges.filter((p) => !p.granted)
  const verdict = check.supported
    ? verdictOf(check.schema, server, readOnlyReason, denied)
    : `unsupported: ${check.reason}.`

  return {
    report: {
      connection: {target: connection.target, source: connection.source, user: server.currentUser},
      server: {
        version: server.version,
        versionNum: server.versionNum,
        canMonitor: server.canMonitor,
        tls: server.tls,
        acceptsWrites: !access.readOnly,
        inRecovery: access.inRecovery,
        readOnlyReason,
      },
      airflow,
      privileges,
      settings,
      verdict,
    },
    exit: !check.supported
      ? ExitCode.unsupportedSchema
      : readOnlyReason !== null || denied.length > 0
        ? ExitCode.readOnly
        : ExitCode.ok,
  }
}

/**
 * The one line that says whether airlock can work on a supported database: a server that accepts
 * no writes first (nothing a writer does helps until it does), then missing privileges, then ready.
 */
function verdictOf(
  schema: AirflowSchema,
  server: ServerInfo,
  readOnlyReason: string | null,
  denied: ReadonlyArray<{object: string; privilege: string}>,
): string {
  const on = `Airflow ${schema.airflowVersion} on PostgreSQL ${server.version}`
  const lacks =
    denied.length > 0
      ? `${server.currentUser} lacks ${denied.map((p) => `${p.privilege} on ${p.object}`).join(', ')} (see the privileges table)`
      : undefined
  const stillWorks = `Still works: ${readOnlyCommands.join(', ')}.`
  if (readOnlyReason !== null)
    return `read-only: ${on}, but the server accepts no writes: ${readOnlyReason}. Every writer stops before its first item (exit 9) until it does; running one again will not help before then.${lacks ? ` Also, ${lacks}.` : ''} ${stillWorks}`
  if (lacks) return `read-only: ${on}, but ${lacks}. ${stillWorks}`
  const caveat =
    schema.placement === 'partly_migrated'
      ? ' An upgrade stopped between releases: finish `airflow db migrate` before relying on airlock here.'
      : schema.placement === 'assumed'
        ? ' The alembic head is unknown to airlock and assumed by --assume-version; upgrade airlock when you can.'
        : schema.placement === 'development'
          ? ' No Airflow release airlock knows has this head: it is a development build.'
          : ''
  return `ready: Airflow ${schema.airflowVersion} (${schema.alembicHead}) on PostgreSQL ${server.version}; ${server.currentUser} can run every airlock command.${caveat}`
}

/** The scheduler's and the DAG processor's latest jobs, judged as Airflow's health check judges them. */
async function readComponents(
  db: Database,
  schema: AirflowSchema,
): Promise<{scheduler: ComponentHealth; dag_processor: ComponentHealth}> {
  let thresholds
  try {
    thresholds = healthThresholds(schema.behaviourVersion)
  } catch (error) {
    if (error instanceof AirflowConfigError) throw usageError(`Airflow's configuration: ${error.message}.`)
    throw error
  }
  const jobs = await storeFor(db, schema.capabilities).readLatestJobs(db.executor, ['SchedulerJob', 'DagProcessorJob'])
  const now = new Date()
  const jobOf = (type: 'SchedulerJob' | 'DagProcessorJob') => (jobs === 'unreadable' ? jobs : jobs.get(type))
  return {
    scheduler: componentHealth(jobOf('SchedulerJob'), thresholds.scheduler, now),
    dag_processor: componentHealth(jobOf('DagProcessorJob'), thresholds.dagProcessor, now),
  }
}
