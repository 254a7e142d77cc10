import {performance} from 'node:perf_hooks'

import {NoAnswer, RoundTripAbandoned, type StatementLog} from '../engine.js'

/**
 * What keeps a round trip from waiting forever for an answer a silent network path never brings
 * (no answer, no FIN, no RST: a firewall that drops, a failover that leaves the old address
 * silent, a stopped proxy, a dead NAT). Nothing else ends that wait: the connect timeout is over
 * once connected; statement_timeout is the server's, and its answer is what never arrives; TCP
 * keepalive is blind to a middlebox whose kernel still acknowledges what it is sent (a stopped
 * proxy), and to a path that died with data unacknowledged (retransmission rules then, for about
 * 15 minutes on Linux).
 *
 * A deadline alone cannot tell a dead path from a slow server without being as long as the
 * longest statement allowed (statement_timeout: 5 minutes for airlock's reads, an hour for
 * audit-events' scans). So a round trip silent for the connect timeout makes the engine ask the
 * server on a new connection of its own (connect, `select 1`, each within the connect timeout):
 * - an answer, even a refusal (too many connections): the server is there and the statement is
 *   merely slow; it waits on, asked again after each further connect timeout of silence, and
 *   the server's own statement_timeout ends it as it would have;
 * - no answer: the path is silent; the round trip is given up (NoAnswer, serverSilent), its
 *   connection ended.
 * A round trip still silent past its statement_timeout plus the connect timeout is given up
 * whatever the question found (NoAnswer): a live path would have carried the server's own timeout
 * back by then, so only this connection's path can be dead (a NAT entry lost, one proxy worker
 * stopped), and another connection may work.
 *
 * The question is shared: every round trip that goes silent while one is asked waits for the same
 * answer, and one sent before the last question found the server silent (or less than a connect
 * timeout after) takes that answer without asking again, so a frozen path costs the batch one
 * question, not one per item or per read after it.
 */
export interface AnswerWatch {
  readonly connectTimeoutMs: number
  /** The run gives up on the server (OpenOptions.abandon). */
  readonly abandon: AbortSignal | undefined
  /** Whether the server answers a new connection now; `since`: when the asking round trip was sent. */
  serverAnswers(since: number): Promise<boolean>
}

export function answerWatch(options: {
  connectTimeoutMs: number
  abandon?: AbortSignal | undefined
  /** Opens a new connection outside the pool and runs `select 1`: true when the server answered. */
  ask: () => Promise<boolean>
  log?: StatementLog | undefined
}): AnswerWatch {
  let asking: Promise<boolean> | undefined
  let silentAt: number | undefined
  return {
    connectTimeoutMs: options.connectTimeoutMs,
    abandon: options.abandon,
    serverAnswers(since) {
      // A question that found the server silent less than a connect timeout before this round
      // trip was sent answers for it too: it has been silent as long since.
      if (silentAt !== undefined && silentAt >= since - options.connectTimeoutMs) return Promise.resolve(false)
      asking ??= (async () => {
        const started = performance.now()
        options.log?.(`no answer for ${options.connectTimeoutMs} ms: asking the server on a new connection`)
        const answers = await options.ask().catch(() => false)
        options.log?.(
          answers
            ? `the server answers a new connection (${Math.round(performance.now() - started)} ms): the statement is slow, not lost`
            : `no answer on a new connection within ${options.connectTimeoutMs} ms: the path to the server is silent`,
        )
        if (!answers) silentAt = performance.now()
        asking = undefined
        return answers
      })()
      return asking
    },
  }
}

/**
 * One round trip under the watch: its answer, or NoAnswer / RoundTripAbandoned once it is given
 * up, after `giveUp` ended its connection (the answer, should it come, then has nowhere to go).
 * `statementTimeoutMs`: the statement_timeout the server applies to it (0: none, no deadline).
 */
export function watched<T>(
  watch: AnswerWatch | undefined,
  statementTimeoutMs: number,
  roundTrip: () => Promise<T>,
  giveUp: () => void,
): Promise<T> {
  if (!watch) return roundTrip()
  const {abandon, connectTimeoutMs} = watch
  if (abandon?.aborted) return Promise.reject(new RoundTripAbandoned(String(abandon.reason)))
  const sent = performance.now()
  const deadline = statementTimeoutMs > 0 ? sent + statementTimeoutMs + connectTimeoutMs : Infinity
  return new Promise<T>((resolve, reject) => {
    let settled = false
    let timer: NodeJS.Timeout | undefined
    const settle = (then: () => void) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      abandon?.removeEventListener('abort', onAbandon)
      then()
    }
    const fail = (error: Error) =>
      settle(() => {
        giveUp()
        reject(error)
      })
    const onAbandon = () => fail(new RoundTripAbandoned(String(abandon?.reason)))
    const arm = () => {
      timer = setTimeout(check, Math.max(0, Math.min(connectTimeoutMs, deadline - performance.now())))
    }
    const check = () => {
      if (settled) return
      if (performance.now() >= deadline) {
        fail(new NoAnswer(performance.now() - sent, false, connectTimeoutMs))
        return
      }
      void watch.serverAnswers(sent).then((answers) => {
        if (settled) return
        if (answers) arm()
        else fail(new NoAnswer(performance.now() - sent, true, connectTimeoutMs))
      })
    }
    abandon?.addEventListener('abort', onAbandon, {once: true})
    // Settled with the round trip's own promise: its value, or its failure as it came.
    const answer = roundTrip()
    const answered = () => settle(() => resolve(answer))
    answer.then(answered, answered)
    arm()
  })
}
