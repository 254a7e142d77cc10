import type {ComponentHealth} from '../airflow/jobHealth.js'
import type {DoctorReport} from '../doctor/runDoctor.js'
import {ago, instant} from '../output/instant.js'
import {renderKeyValues, renderTable} from '../output/table.js'

export function renderDoctor(report: DoctorReport, width?: number): string {
  const {airflow, server, connection} = report
  const capabilities = airflow.capabilities
  const sections = [
    renderKeyValues([
      ['database', connection.target],
      ['connection from', connection.source],
      ['user', connection.user],
      ['postgresql', server.version],
      ['tls', server.tls ?? 'no (not encrypted)'],
      ['writes', server.acceptsWrites ? 'accepted' : `refused: ${server.readOnlyReason ?? 'the server is read-only'}`],
      ['alembic head', airflow.alembicHead],
      ['airflow', airflow.supported ? placementText(airflow) : `unsupported (${airflow.reason})`],
      ['inlet references', capabilities ? yesNo(capabilities.inletReferences) : null],
      ['event partition keys', capabilities ? yesNo(capabilities.eventPartitionKey) : null],
      ['partitioned timetables', capabilities ? yesNo(capabilities.partitionedTimetables) : null],
      [
        'queue shape',
        capabilities
          ? capabilities.queueShape === 'per_event'
            ? 'one row per event (3.4)'
            : 'one row per asset and DAG (upsert)'
          : null,
      ],
      [
        'consumers skipped',
        capabilities
          ? capabilities.consumerFilter === 'all_skip_paused'
            ? 'paused DAGs (stale ones are queued)'
            : 'paused and stale DAGs scheduled by asset id or alias (by name or uri: none)'
          : null,
      ],
      ['multi-team columns', capabilities ? yesNo(capabilities.multiTeam) : null],
      [
        'team filter',
        airflow.airflowSettings?.multiTeam
          ? `${capabilities?.teamFilter ? 'on' : 'off'} ([core] multi_team from ${airflow.airflowSettings.multiTeam.source})`
          : null,
      ],
      [
        'task state cleared on success',
        airflow.airflowSettings?.clearStateOnSuccess
          ? `${capabilities?.clearTaskStateOnSuccess ? `yes (${capabilities.taskStateTable ?? ''})` : 'no'} ([state_store] clear_on_success from ${airflow.airflowSettings.clearStateOnSuccess.source})`
          : null,
      ],
      ['worker task state backend', workerStateBackendText(airflow)],
      ['scheduler', airflow.components ? componentText(airflow.components.scheduler, 'SchedulerJob') : null],
      ['DAG processor', airflow.components ? componentText(airflow.components.dag_processor, 'DagProcessorJob') : null],
      ['lock monitoring (pg_monitor)', server.canMonitor ? 'yes' : "no: audit-locks sees only this user's sessions"],
    ]),
  ]

  const backendWarning = workerStateBackendWarning(airflow)
  if (backendWarning) sections.push(`! ${backendWarning}`)

  if (airflow.supported) {
    const denied = report.privileges.filter((p) => !p.granted)
    sections.push(
      denied.length === 0
        ? `privileges: all ${report.privileges.length} that airlock uses are granted`
        : 'missing privileges:\n' +
            renderTable(
              ['object', 'privilege', 'needed by'],
              denied.map((p) => [p.object, p.privilege, p.neededBy]),
              {width},
            ),
    )
  }

  sections.push(
    renderTable(
      ['setting', 'value', 'source', 'status', "airlock's own session"],
      report.settings.map((s) => [s.name, s.value, s.source, s.level, s.airlockSession ?? '']),
      {width},
    ),
  )
  const advice = report.settings.filter((s) => s.advice)
  if (advice.length > 0)
    sections.push(advice.map((s) => `${s.level === 'warning' ? '!' : '-'} ${s.name}: ${s.advice}`).join('\n'))
  sections.push(`verdict: ${report.verdict}`)
  return sections.join('\n\n')
}

const yesNo = (value: boolean) => (value ? 'yes' : 'no')

function workerStateBackendText(airflow: DoctorReport['airflow']): string | null {
  const backend = airflow.airflowSettings?.workerStateBackend
  return backend ? `${backend.value} (${backend.option} from ${backend.source})` : null
}

/**
 * With a worker-side task state backend and `clear_on_success` on, a worker's success clears the
 * backend's payloads before the API server deletes the rows (apache/airflow #66859); airlock, like
 * REST mark-success, runs no worker code and deletes only the rows, which hold references.
 */
export function workerStateBackendWarning(airflow: DoctorReport['airflow']): string | undefined {
  const backend = airflow.airflowSettings?.workerStateBackend
  if (!backend || !airflow.capabilities?.clearTaskStateOnSuccess) return undefined
  return `${backend.option} = ${backend.value}: a worker's success clears that backend's payloads, airlock's (like REST mark-success) cannot; complete deletes only the task state rows that point to them, leaving the payloads in the backend unreferenced`
}

function placementText(airflow: DoctorReport['airflow']): string {
  const behaviour =
    airflow.behaviourVersion && !airflow.version?.startsWith(airflow.behaviourVersion)
      ? `; behaves as ${airflow.behaviourVersion}`
      : ''
  if (airflow.placement === 'partly_migrated')
    return `${airflow.version}: an upgrade stopped between releases${behaviour}`
  if (airflow.placement === 'assumed')
    return `${airflow.version}: head unknown to airlock, tables checked against --assume-version`
  return `${airflow.version}${behaviour}`
}

/**
 * A component's health for people: information, not a failure (airlock needs no scheduler), as
 * Airflow's health check judges it ("alive, last heartbeat 2026-12-07 20:13:02Z, 3 s ago").
 */
export function componentText(health: ComponentHealth, jobType: string, now: Date = new Date()): string {
  if (health.alive === null) return 'unknown (this role may not read the job table)'
  if (health.state === null) return `none (the job table has no ${jobType} row)`
  const beat =
    health.last_heartbeat === null
      ? 'never beat'
      : `last heartbeat ${instant(health.last_heartbeat)}, ${ago(new Date(health.last_heartbeat), now)}`
  const host = health.hostname ? ` on ${health.hostname}` : ''
  return health.alive
    ? `alive${host} (${beat})`
    : `not running (latest job${host} ${health.state}, ${beat}; alive means running with a heartbeat younger than ${health.threshold_seconds} s, ${health.threshold_from})`
}
