/**
 * What became of one POST of a COMPLETE event: `sent` (the backend answered 2xx), `unconfirmed`
 * (the request may have arrived: a timeout, or a connection lost after the body went out),
 * `failed` (it did not arrive or was refused: a refused connection, an unknown host, an HTTP
 * error). Only `sent` removes an event from the spool.
 */
export type Delivery = 'sent' | {unconfirmed: string} | {failed: string}

/** How a COMPLETE is POSTed: the OpenLineage HTTP transport's `timeout` and `retry` settings. */
export interface SendPolicy {
  timeoutMs: number
  /** Attempts in all (the transport's retry `total` + 1). */
  attempts: number
  /** The first back-off; each retry doubles it (the transport's `backoff_factor`, in milliseconds). */
  backoffMs: number
}

export const defaultSendPolicy: SendPolicy = {timeoutMs: 5000, attempts: 3, backoffMs: 200}

/** Errors after which the request cannot have reached the backend. */
const neverArrived = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH'])

/**
 * POSTs one RunEvent as the client's HTTP transport does (JSON body, `Authorization: Bearer` when
 * there is an API key), with the policy's timeout and retries with back-off on what may pass (a
 * refused connection, a timeout, 429 and 5xx). Never throws.
 */
export async function sendEvent(
  target: {url: string; apiKey: string | undefined},
  body: string,
  policy: SendPolicy = defaultSendPolicy,
  /** Aborted when the run stops waiting: the attempt in flight ends unconfirmed, no retry follows. */
  stop?: AbortSignal,
): Promise<Delivery> {
  let why = ''
  let mayHaveArrived = false
  for (let attempt = 1; attempt <= policy.attempts; attempt++) {
    // One controller per request with its own timer; `stop` aborts it through a listener removed
    // when the request ends, so nothing stays attached to the run's long-lived signal.
    const controller = new AbortController()
    const timer = setTimeout(
      () => controller.abort(new DOMException(`no answer within ${policy.timeoutMs} ms`, 'TimeoutError')),
      policy.timeoutMs,
    )
    const onStop = () => controller.abort(new DOMException('the run stopped waiting', 'AbortError'))
    stop?.addEventListener('abort', onStop, {once: true})
    try {
      const response = await fetch(target.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(target.apiKey ? {authorization: `Bearer ${target.apiKey}`} : {}),
        },
        body,
        signal: controller.signal,
      })
      // The body is not needed; reading it frees the connection.
      await response.arrayBuffer().catch(() => undefined)
      if (response.ok) return 'sent'
      why = `HTTP ${response.status}`
      if (response.status !== 429 && response.status < 500) return {failed: why}
    } catch (error) {
      const failure = describeFailure(error, policy.timeoutMs)
      why = failure.why
      mayHaveArrived ||= failure.mayHaveArrived
    } finally {
      clearTimeout(timer)
      stop?.removeEventListener('abort', onStop)
    }
    if (stop?.aborted) return {unconfirmed: `${why}: the run stopped waiting for the backend`}
    if (attempt < policy.attempts) await sleep(policy.backoffMs * 2 ** (attempt - 1))
  }
  const attempts = `${why} after ${policy.attempts} attempt${policy.attempts === 1 ? '' : 's'}`
  return mayHaveArrived ? {unconfirmed: attempts} : {failed: attempts}
}

function describeFailure(error: unknown, timeoutMs: number): {why: string; mayHaveArrived: boolean} {
  if (error instanceof DOMException && error.name === 'TimeoutError')
    return {why: `no answer within ${timeoutMs} ms`, mayHaveArrived: true}
  if (error instanceof DOMException && error.name === 'AbortError') return {why: 'cut short', mayHaveArrived: true}
  const code = (error as {cause?: {code?: string}}).cause?.code
  if (code) return {why: code, mayHaveArrived: !neverArrived.has(code)}
  return {why: error instanceof Error ? error.message : String(error), mayHaveArrived: true}
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
