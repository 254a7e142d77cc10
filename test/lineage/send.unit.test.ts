import http from 'node:http'
import net from 'node:net'
import type {AddressInfo} from 'node:net'

import {afterEach, describe, expect, it} from 'vitest'

import {sendEvent, type SendPolicy} from '../../src/lineage/send.js'

/**
 * One COMPLETE POSTed to a real server on 127.0.0.1, per way a request can end: what is retried
 * (nothing can have been delivered) and what is not (the body went out, so the backend may hold
 * it: a retry could store it twice).
 */
const policy: SendPolicy = {timeoutMs: 300, attempts: 3, backoffMs: 10}
const body = JSON.stringify({eventType: 'COMPLETE', run: {runId: '01890000-0000-7000-8000-000000000000'}})

const servers: Array<http.Server | net.Server> = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    if (server instanceof http.Server) server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

async function listen(server: http.Server | net.Server): Promise<string> {
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/lineage`
}

/**
 * An HTTP server that answers the nth whole request it received (from 1) with `answer(n)`: at once
 * when it is an error, else after `okDelayMs`.
 */
async function collector(answer: (n: number) => number, okDelayMs = 0): Promise<{url: string; requests: () => number}> {
  let requests = 0
  const url = await listen(
    http.createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        const status = answer(++requests)
        setTimeout(() => res.writeHead(status).end(), status < 300 ? okDelayMs : 0)
      })
    }),
  )
  return {url, requests: () => requests}
}

const target = (url: string) => ({url, apiKey: undefined})

describe('sendEvent: retried only when nothing can have been delivered', () => {
  it('2xx is sent, at the first attempt', async () => {
    const c = await collector(() => 201)
    expect(await sendEvent(target(c.url), body, policy)).toBe('sent')
    expect(c.requests()).toBe(1)
  })

  it('an answer later than the timeout: one POST only, maybe delivered', async () => {
    const c = await collector(() => 201, 1000)
    const delivery = await sendEvent(target(c.url), body, policy)
    expect(delivery).toEqual({maybeDelivered: 'no answer within 300 ms after the body was sent'})
    // Give a retry, had there been one, the time to arrive.
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(c.requests()).toBe(1)
  })

  it('a connection reset after the whole body went out: one POST only, maybe delivered', async () => {
    let connections = 0
    let received = 0
    const url = await listen(
      net.createServer((socket) => {
        connections++
        socket.on('data', (chunk: Buffer) => {
          received += chunk.length
          // The request's end: the body is whole; the server goes away before answering.
          if (chunk.toString('utf8').endsWith(body)) socket.resetAndDestroy()
        })
      }),
    )
    const delivery = await sendEvent(target(url), body, policy)
    expect(delivery).toEqual({maybeDelivered: 'ECONNRESET after the body was sent'})
    expect(connections).toBe(1)
    expect(received).toBeGreaterThan(body.length)
  })

  it('a connection reset before the body went out is retried, and then not delivered', async () => {
    // A body larger than loopback's socket buffers cannot be handed over before the server reads
    // it; this server reads nothing and resets each connection.
    const large = JSON.stringify({padding: 'x'.repeat(32 * 1024 * 1024)})
    let connections = 0
    const url = await listen(
      net.createServer((socket) => {
        connections++
        socket.pause()
        setTimeout(() => socket.resetAndDestroy(), 50)
      }),
    )
    const delivery = await sendEvent(target(url), large, policy)
    expect(delivery).toEqual({failed: 'ECONNRESET after 3 attempts'})
    expect(connections).toBe(3)
  })

  it('a refused connection is retried, and then not delivered', async () => {
    const closed = net.createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const {port} = closed.address() as AddressInfo
    await new Promise((resolve) => closed.close(resolve))
    expect(await sendEvent(target(`http://127.0.0.1:${port}/`), body, policy)).toEqual({
      failed: 'ECONNREFUSED after 3 attempts',
    })
  })

  it('an unknown host is retried, and then not delivered', async () => {
    const delivery = await sendEvent(target('http://airlock-collector.invalid/'), body, policy)
    // A resolver that does not answer in time is the same case: nothing went out.
    expect(delivery).toMatchObject({
      failed: expect.stringMatching(/^(ENOTFOUND|EAI_AGAIN|not sent within 300 ms) after 3 attempts$/),
    })
  })

  it('503 and 429 are retried (the backend said it did not take it); 400 is not', async () => {
    const unavailable = await collector(() => 503)
    expect(await sendEvent(target(unavailable.url), body, policy)).toEqual({failed: 'HTTP 503 after 3 attempts'})
    expect(unavailable.requests()).toBe(3)
    const limited = await collector((n) => (n === 1 ? 429 : 200))
    expect(await sendEvent(target(limited.url), body, policy)).toBe('sent')
    expect(limited.requests()).toBe(2)
    const refused = await collector(() => 400)
    expect(await sendEvent(target(refused.url), body, policy)).toEqual({failed: 'HTTP 400'})
    expect(refused.requests()).toBe(1)
  })

  it('a 503, then an answer later than the timeout: maybe delivered (the second POST may have been stored)', async () => {
    const c = await collector((n) => (n === 1 ? 503 : 201), 1000)
    expect(await sendEvent(target(c.url), body, policy)).toEqual({
      maybeDelivered: 'no answer within 300 ms after the body was sent',
    })
    expect(c.requests()).toBe(2)
  })

  it('the run stops waiting: an answer awaited is maybe delivered, and no retry follows', async () => {
    const c = await collector(() => 201, 5000)
    const stop = new AbortController()
    setTimeout(() => stop.abort(), 100)
    const delivery = await sendEvent(target(c.url), body, {...policy, timeoutMs: 10_000}, stop.signal)
    expect(delivery).toEqual({maybeDelivered: 'the run stopped waiting for the answer'})
    expect(c.requests()).toBe(1)
  })
})
