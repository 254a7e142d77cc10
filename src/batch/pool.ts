export interface BatchOptions<R> {
  /** Items in flight at once; each holds one pooled connection for its transaction. */
  concurrency: number
  /** Checked before each item is taken: true after SIGINT/SIGTERM. In-flight items finish. */
  shouldStop: () => boolean
  onResult: (result: R) => void
  /**
   * A result that says the server is gone (a connection-class failure the engine's retries did
   * not survive): no new item is taken after it, the in-flight ones resolve, and the batch ends
   * with `lost`, one event rather than a failure per item left.
   */
  lostServer?: (result: R) => boolean
}

/**
 * Runs one protocol transaction per item over a small pool of workers pulling from one stream, so
 * a million-item selection is never materialised: the stream pages, the workers consume.
 */
export async function runBatch<Item, R>(
  items: AsyncIterable<Item> | Iterable<Item>,
  work: (item: Item) => Promise<R>,
  options: BatchOptions<R>,
): Promise<{interrupted: boolean; lost: boolean}> {
  const iterator: AsyncIterator<Item> | Iterator<Item> =
    Symbol.asyncIterator in items ? items[Symbol.asyncIterator]() : items[Symbol.iterator]()
  // Set by the workers, read after they all stopped.
  const run: {interrupted: boolean; lost: boolean; failure?: {error: unknown}; readFailure?: {error: unknown}} = {
    interrupted: false,
    lost: false,
  }
  // Async generators queue concurrent next() calls, but a plain iterable may not: serialise them.
  let pulling: Promise<unknown> = Promise.resolve()
  const next = () => {
    const pull = pulling.then(async () => iterator.next())
    pulling = pull.catch(() => undefined)
    return pull
  }

  // The first failure (a bug, a lost page query) stops the other workers from taking new items;
  // their in-flight items finish and are reported before the failure is rethrown.
  const worker = async () => {
    try {
      for (;;) {
        if (run.failure || run.readFailure || run.lost) return
        if (options.shouldStop()) {
          run.interrupted = true
          return
        }

        let step: IteratorResult<Item>
        try {
          step = await next()
        } catch (error) {
          // A read of the next items that failed once the run was stopping (a signal's grace
          // spent on it) ends the batch as interrupted: what it would have given is not reached.
          // Otherwise it is the batch's failure, unless an item in flight finds the server gone.
          if (options.shouldStop()) {
            run.interrupted = true
            return
          }
          run.readFailure ??= {error}
          return
        }
        if (step.done === true) return
        // The signal came while the next item was being read: it is not started (not reached).
        if (options.shouldStop()) {
          run.interrupted = true
          return
        }
        const result = await work(step.value)
        if (options.lostServer?.(result)) run.lost = true
        options.onResult(result)
      }
    } catch (error) {
      run.failure ??= {error}
    }
  }

  await Promise.all(Array.from({length: Math.max(1, options.concurrency)}, worker))
  // A read of the next items that failed while an item in flight found the server gone failed for
  // the same reason: the batch ends as lost, the items it would have given never reached.
  const failure = run.failure ?? (run.lost ? undefined : run.readFailure)
  if (run.interrupted || failure || run.lost) await Promise.resolve(iterator.return?.(undefined)).catch(() => undefined)
  if (failure) throw failure.error
  return {interrupted: run.interrupted, lost: run.lost}
}
