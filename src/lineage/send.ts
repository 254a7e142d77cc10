import http from 'node:http'
import https from 'node:https'

/**
 * What became of one COMPLETE event's POSTs:
 *
 * - `sent`: the backend answered 2xx;
 * - `maybeDelivered`: the whole body went out and no answer came (a timeout, the connection lost,
 *   the run stopped waiting): the backend may hold it, so it is not sent again blindly;
 * - `failed`: nothing can have been delivered (a refused connection, an unknown host, a connection
 *   lost before the body went out, HTTP 429 or 5xx, each after the retries), or the backend
 *   refused it (another HTTP answer, not retried);
 * - `stopped`: the run stopped waiting before the body went out (not tried to the end).
 *
 * Only `sent` removes an event from the spool; `maybeDelivered` keeps it apart there.
 */
export type Delivery = 'sent' | {maybeDelivered: string} | {failed: string} | {stopped: string}

/** How a COMPLETE is POSTed: the OpenLineage HTTP transport's `timeout` and `retry` settings. */
export interface SendPolicy {
  timeoutMs: number
  /** Attempts in all (the transport's retry `total` + 1), for what cannot have been delivered. */
  attempts: number
  /** The first back-off; each retry doubles it (the transport's `backoff_factor`, in milliseconds). */
  backoffMs: number
}

export const defaultSendPolicy: SendPolicy = {timeoutMs: 5000, attempts: 3, backoffMs: 200}

/** How one attempt ended: an HTTP answer, or no answer, and whether the whole body had gone out. */
type Attempt = {status: number} | {error: string; bodySent: boolean; stopped: boolean}

/**
 * POSTs one RunEvent as the client's HTTP transport does (JSON body, `Authorization: Bearer` when
 * there is an API key), with the policy's timeout. What may be retried is decided per attempt:
 *
 * - an answer: 2xx is sent; 429 and 5xx (the backend says it did not take it) are retried; any
 *   other answer is the backend's refusal, not retried;
 * - no answer, the whole body handed to the connection (the request's `finish`): the backend may
 *   have stored it and only the answer was lost, so it is never retried (maybe delivered);
 * - no answer, the body not all handed over (a refused connection, an unknown host, a reset or a
 *   timeout while connecting or sending): the backend cannot have read a whole event, so it is
 *   retried, with back-off.
 *
 * Each attempt opens its own connection (no keep-alive): a kept-alive connection the server closed
 * while idle takes a request and resets, which cannot be told apart from a server that read the
 * request and then failed. Never throws.
 */
export async function sendEvent(
  target: {url: string; apiKey: string | undefined},
  body: string,
  policy: SendPolicy = defaultSendPolicy,
  /** Aborted when the run stops waiting: the attempt in flight ends, no retry follows. */
  stop?: AbortSignal,
): Promise<Delivery> {
  let why = ''
  const payload = Buffer.from(body, 'utf8')
  for (let attempt = 1; attempt <= policy.attempts; attempt++) {
    if (stop?.aborted) return {stopped: `${why ? `${why}; ` : ''}the run stopped waiting before it was sent`}
    const ended = await postOnce(target, payload, policy.timeoutMs, stop)
    if ('status' in ended) {
      if (ended.status >= 200 && ended.status < 300) return 'sent'
      why = `HTTP ${ended.status}`
      if (ended.status !== 429 && ended.status < 500) return {failed: why}
    } else if (ended.bodySent) {
      return {maybeDelivered: ended.stopped ? ended.error : `${ended.error} after the body was sent`}
    } else if (ended.stopped) {
      return {stopped: `${ended.error} before it was sent`}
    } else why = ended.error
    if (attempt < policy.attempts) await sleep(policy.backoffMs * 2 ** (attempt - 1), stop)
  }
  return {failed: `${why} after ${policy.attempts} attempt${policy.attempts === 1 ? '' : 's'}`}
}

/** Agents without keep-alive (Node's global agents keep connections alive); https's caches TLS sessions. */
const agents = {
  http: new http.Agent({keepAlive: false}),
  https: new https.Agent({keepAlive: false}),
}

function postOnce(
  target: {url: string; apiKey: string | undefined},
  payload: Buffer,
  timeoutMs: number,
  stop: AbortSignal | undefined,
): Promise<Attempt> {
  return new Promise((resolve) => {
    const url = new URL(target.url)
    const secure = url.protocol === 'https:'
    let bodySent = false
    let settled = false
    const onStop = () =>
      end({error: bodySent ? 'the run stopped waiting for the answer' : 'the run stopped waiting', stopped: true})
    const end = (ending: {status: number} | {error: string; stopped?: boolean}) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      stop?.removeEventListener('abort', onStop)
      if ('status' in ending) resolve(ending)
      else {
        resolve({error: ending.error, bodySent, stopped: ending.stopped ?? false})
        request.destroy()
      }
    }
    const request = (secure ? https : http).request(url, {
      method: 'POST',
      agent: secure ? agents.https : agents.http,
      headers: {
        'content-type': 'application/json',
        'content-length': payload.length,
        ...(target.apiKey ? {authorization: `Bearer ${target.apiKey}`} : {}),
      },
    })
    // The last of the request handed to the operating system (Node's ClientRequest `finish`):
    // from now on the backend may read all of it.
    request.on('finish', () => (bodySent = true))
    request.on('response', (response) => {
      // The body is not needed; reading it lets the connection close.
      response.resume()
      response.on('error', () => undefined)
      end({status: response.statusCode ?? 0})
    })
    request.on('error', (error: NodeJS.ErrnoException) => end({error: error.code ?? error.message}))
    const timer = setTimeout(
      () => end({error: bodySent ? `no answer within ${timeoutMs} ms` : `not sent within ${timeoutMs} ms`}),
      timeoutMs,
    )
    stop?.addEventListener('abort', onStop, {once: true})
    request.end(payload)
  })
}

/** Waits `ms`, or less when `stop` aborts meanwhile. */
function sleep(ms: number, stop: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      stop?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    stop?.addEventListener('abort', done, {once: true})
  })
}
