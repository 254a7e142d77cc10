/** What became of an item's COMPLETE event. */
export type LineageOutcome = 'sent' | 'disabled' | 'would_send' | {failed: string}

/**
 * POSTs one RunEvent as the client's HTTP transport does (JSON body, `Authorization: Bearer` when
 * there is an API key), with a timeout and a few retries with back-off on what may pass (a
 * refused connection, a timeout, 429 and 5xx). Never throws: a backend that is down is the
 * item's `failed (why)`, never the completion's.
 */
export async function sendEvent(
  target: {url: string; apiKey: string | undefined},
  event: unknown,
  options: {timeoutMs?: number; attempts?: number; backoffMs?: number} = {},
): Promise<LineageOutcome> {
  const timeoutMs = options.timeoutMs ?? 5000
  const attempts = options.attempts ?? 3
  const body = JSON.stringify(event)
  let why = ''
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      const response = await fetch(target.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(target.apiKey ? {authorization: `Bearer ${target.apiKey}`} : {}),
        },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      })
      // The body is not needed; reading it frees the connection.
      await response.arrayBuffer().catch(() => undefined)
      if (response.ok) return 'sent'
      why = `HTTP ${response.status}`
      if (response.status !== 429 && response.status < 500) return {failed: why}
    } catch (error) {
      why = describeFailure(error, timeoutMs)
    }
    if (attempt < attempts) await sleep((options.backoffMs ?? 200) * 2 ** (attempt - 1))
  }
  return {failed: `${why} after ${attempts} attempts`}
}

function describeFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') return `no answer within ${timeoutMs} ms`
  const cause = (error as {cause?: {code?: string}}).cause
  if (cause?.code) return cause.code
  return error instanceof Error ? error.message : String(error)
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
