/**
 * The parts of a selection, by what each means. The selection's messages name them through a
 * SelectorNames the caller gives: the command line passes its flags (selectorFlags in
 * src/cli/selectionFlags.ts), so the operator reads the flag they typed; a library caller that
 * gives none reads these plain words.
 */
export interface SelectorNames {
  /** Task instances named one by one, by id or key. */
  tiId: string
  /** A file of task instances, one per line. */
  fromFile: string
  dagId: string
  runId: string
  taskId: string
  mapIndex: string
  /** The start of the run_after window. */
  since: string
  /** The end of the run_after window. */
  until: string
  /** The consent that a filter without a DAG reaches every DAG. */
  allDags: string
  /** One hash partition of a filter selection. */
  shard: string
  /** A run that rolls every write back. */
  dryRun: string
  /** The states a writer takes a task instance from (complete's), which filter a filter selection. */
  states: string
}

export const plainSelectorNames: SelectorNames = {
  tiId: 'task instance ids',
  fromFile: 'input file',
  dagId: 'DAG',
  runId: 'run',
  taskId: 'task',
  mapIndex: 'map index',
  since: 'since',
  until: 'until',
  allDags: 'all DAGs',
  shard: 'a shard',
  dryRun: 'a dry run',
  states: 'the writer',
}
