import type {Executor} from '../../engine/engine.js'

/**
 * The heartbeats of Airflow's long-running jobs (postgres/jobs.ts): whether a scheduler and a DAG
 * processor are running, which `explain` and `doctor` report. airlock needs neither to work.
 */
export interface JobStore {
  /**
   * The most recent job of each type, as `most_recent_job` (airflow/jobs/job.py) picks it: a
   * running one first, then the latest heartbeat. `unreadable` when the role may not read `job`.
   */
  readLatestJobs(ex: Executor, jobTypes: readonly JobType[]): Promise<Map<JobType, LatestJob> | 'unreadable'>
}

/** `SchedulerJobRunner.job_type` and `DagProcessorJobRunner.job_type` (airflow/jobs/). */
export type JobType = 'SchedulerJob' | 'DagProcessorJob'

export interface LatestJob {
  id: number
  state: string | null
  latestHeartbeat: Date | null
  hostname: string | null
}
