import {readAirflowNumber, type AirflowNumberSetting} from './config.js'
import {compareVersions} from './revisions.js'

/**
 * Whether a scheduler (or a DAG processor) is running, judged as Airflow's own health check
 * judges it (`get_airflow_health`, airflow/api/common/airflow_health.py, behind `/api/v2/monitor/health`):
 * the most recent job of its type (`most_recent_job`, airflow/jobs/job.py) is alive when its state
 * is running and its latest heartbeat is younger than the threshold (`Job._is_alive`). The
 * threshold is `health_check_threshold` there: `[scheduler] scheduler_health_check_threshold`
 * (default 30 s) for the scheduler; for the DAG processor `[dag_processor] health_check_threshold`
 * (default 30 s) from 3.2.0, before it the job's heartrate `[scheduler] job_heartbeat_sec`
 * (default 5 s) times 2.1. A job's "now" is the reader's clock (`timezone.utcnow()`), as airlock's is.
 */
export interface ComponentHealth {
  /** null: the role may not read the `job` table, so nobody knows. */
  alive: boolean | null
  /** The most recent job's latest heartbeat (ISO 8601), null when there is no job or it never beat. */
  last_heartbeat: string | null
  /** The most recent job's state ('running', 'success', 'failed', …), null when there is none. */
  state: string | null
  hostname: string | null
  threshold_seconds: number
  /** `[section] key from <where>`: where the threshold was read. */
  threshold_from: string
}

/** The most recent job of a type, as the store reads it. */
export interface JobRow {
  state: string | null
  latestHeartbeat: Date | null
  hostname: string | null
}

export interface HealthThresholds {
  scheduler: AirflowNumberSetting
  dagProcessor: AirflowNumberSetting
}

/** The thresholds a release reads, from the operator's environment and airflow.cfg (src/airflow/config.ts). */
export function healthThresholds(behaviourVersion: string, env: NodeJS.ProcessEnv = process.env): HealthThresholds {
  const scheduler = readAirflowNumber('scheduler', 'scheduler_health_check_threshold', 'int', 30, env)
  if (compareVersions(behaviourVersion, '3.2.0') >= 0)
    return {scheduler, dagProcessor: readAirflowNumber('dag_processor', 'health_check_threshold', 'int', 30, env)}
  const heartrate = readAirflowNumber('scheduler', 'job_heartbeat_sec', 'float', 5, env)
  return {
    scheduler,
    dagProcessor: {value: heartrate.value * 2.1, option: `${heartrate.option} × 2.1`, source: heartrate.source},
  }
}

export function componentHealth(
  job: JobRow | undefined | 'unreadable',
  threshold: AirflowNumberSetting,
  now: Date,
): ComponentHealth {
  const base = {threshold_seconds: threshold.value, threshold_from: `${threshold.option} from ${threshold.source}`}
  if (job === 'unreadable') return {alive: null, last_heartbeat: null, state: null, hostname: null, ...base}
  if (!job) return {alive: false, last_heartbeat: null, state: null, hostname: null, ...base}
  const beat = job.latestHeartbeat
  return {
    alive: beat !== null && job.state === 'running' && (now.getTime() - beat.getTime()) / 1000 < threshold.value,
    last_heartbeat: beat?.toISOString() ?? null,
    state: job.state,
    hostname: job.hostname,
    ...base,
  }
}
