import {runCli} from '../../support/cli.js'
import type {TestDatabase} from '../../support/database.js'
import type {Emission} from './airflow.js'

/** The DAGs `airlock explain --all` says the next scheduler loop creates a run for, sorted. */
export async function willRun(database: TestDatabase): Promise<string[]> {
  const explained = await runCli(['explain', '--database-url', database.url, '--all', '--json'])
  if (explained.code !== 0) throw new Error(`explain exited ${explained.code}: ${explained.stderr}`)
  const envelope = JSON.parse(explained.stdout) as {result: {dags: Array<{dag_id: string; verdict: string}>}}
  return envelope.result.dags
    .filter((dag) => dag.verdict === 'will_run')
    .map((dag) => dag.dag_id)
    .sort()
}

/** What a `complete --from-file` line's `outlet_events` say for the emissions a task recorded. */
export const airlockEvents = (emit: Emission[]) =>
  emit.map((event) => ({
    asset: {name: event.asset, uri: event.uri ?? event.asset},
    extra: event.extra ?? {},
    ...(event.alias ? {alias: event.alias} : {}),
  }))

/**
 * What `airlock explain --all` says the next scheduler loop creates: one `dag_id` per DAG run from
 * the queue, and `dag_id key=K` per pending partition run that will run (3.2+), sorted.
 */
export async function willRunRuns(database: TestDatabase): Promise<string[]> {
  const explained = await runCli(['explain', '--database-url', database.url, '--all', '--json'])
  if (explained.code !== 0) throw new Error(`explain exited ${explained.code}: ${explained.stderr}`)
  const envelope = JSON.parse(explained.stdout) as {
    result: {
      dags: Array<{dag_id: string; verdict: string; partitions?: Array<{partition_key: string; verdict: string}>}>
    }
  }
  return envelope.result.dags
    .flatMap((dag) =>
      dag.partitions
        ? dag.partitions.filter((p) => p.verdict === 'will_run').map((p) => `${dag.dag_id} key=${p.partition_key}`)
        : dag.verdict === 'will_run'
          ? [dag.dag_id]
          : [],
    )
    .sort()
}
