import type {Executor} from '../../engine/engine.js'
import {prepared, statement} from '../../engine/prepared.js'
import type {JobStore, JobType, LatestJob} from '../families/jobs.js'

/**
 * The `job` table (`Job`, airflow/jobs/job.py; the same columns on every supported release). The
 * most recent job of each type is `most_recent_job`'s: `ORDER BY CASE state WHEN 'running' THEN 0
 * ELSE 1 END, latest_heartbeat DESC LIMIT 1` (PostgreSQL puts a NULL heartbeat first under DESC,
 * as Airflow's query does), one row per type off the `job_type_heart` index.
 */
export function jobStore(): JobStore {
  const latest = prepared(
    'latest_jobs',
    `select distinct on (job_type) id, job_type, state, latest_heartbeat, hostname
       from job
      where job_type = any($1::text[])
      order by job_type, case state when 'running' then 0 else 1 end, latest_heartbeat desc`,
  )
  return {
    async readLatestJobs(ex: Executor, jobTypes: readonly JobType[]) {
      // A role that may not read `job` (or a database without it) gets no heartbeat, not an
      // error: neither explain nor doctor needs one to work.
      const [access] = await ex.query<{readable: boolean | null}>(
        statement(`select has_table_privilege(to_regclass('public.job'), 'select') as readable`),
      )
      if (!access?.readable) return 'unreadable'
      const rows = await ex.query<{
        id: number
        job_type: JobType
        state: string | null
        latest_heartbeat: Date | null
        hostname: string | null
      }>(latest([jobTypes]))
      return new Map<JobType, LatestJob>(
        rows.map((r) => [
          r.job_type,
          {id: r.id, state: r.state, latestHeartbeat: r.latest_heartbeat, hostname: r.hostname},
        ]),
      )
    },
  }
}
