import net from 'node:net'

/**
 * A loopback TCP proxy in front of the test server that can freeze: it stops forwarding in both
 * directions and leaves every socket open, so airlock sees neither an answer nor a FIN nor a RST.
 * That is what a SIGSTOPped proxy, a firewall that drops, a failover that leaves the old address
 * silent or a dead NAT look like from the client: the kernel on this side still accepts and
 * acknowledges what airlock sends (so TCP keepalive cannot see it), and a new connection is
 * accepted by the listening socket and never answered.
 */
export interface FreezingProxy {
  /** The target's URL with the proxy's host and port. */
  url: string
  /**
   * Stop forwarding now, both directions, sockets left open. `open`: only the connections open
   * now freeze, and new ones are forwarded (one dead path beside a server that still answers: a
   * lost NAT entry, one stopped proxy worker).
   */
  freeze(scope?: 'all' | 'open'): void
  /**
   * Freeze when the `nth` client message holding `text` passes (counted from now, on any
   * connection): `deliver` sends it to the server first (the server acts on it, its answer is
   * lost), `drop` swallows it (the server never sees it). Resolves once frozen.
   */
  freezeAt(text: string, options?: {nth?: number; how?: 'deliver' | 'drop'}): Promise<void>
  readonly frozen: boolean
  /** Destroys every socket (the server then rolls back what was open) and stops listening. */
  close(): Promise<void>
}

export async function startFreezingProxy(target: URL): Promise<FreezingProxy> {
  const sockets = new Set<net.Socket>()
  const frozenSockets = new WeakSet<net.Socket>()
  const state = {frozen: false}
  let trigger: {text: string; nth: number; how: 'deliver' | 'drop'; done: () => void} | undefined

  const freeze = (scope: 'all' | 'open' = 'all') => {
    if (scope === 'all') state.frozen = true
    // Nothing is read any more: the kernel's buffers fill and the window closes, as behind a
    // stopped process. Nothing is closed either.
    for (const socket of sockets) {
      frozenSockets.add(socket)
      socket.pause()
    }
  }
  const hold = (socket: net.Socket) => {
    sockets.add(socket)
    socket.on('error', () => undefined)
    socket.on('close', () => sockets.delete(socket))
  }

  const server = net.createServer((client) => {
    hold(client)
    // A connection that comes while frozen is accepted by the kernel and never answered.
    if (state.frozen) {
      client.pause()
      return
    }
    const upstream = net.connect(Number(target.port || 5432), target.hostname)
    hold(upstream)
    client.on('data', (chunk: Buffer) => {
      if (frozenSockets.has(client)) return
      if (trigger && chunk.toString('latin1').includes(trigger.text) && --trigger.nth === 0) {
        const {how, done} = trigger
        trigger = undefined
        if (how === 'deliver') upstream.write(chunk)
        freeze()
        done()
        return
      }
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (!frozenSockets.has(upstream)) client.write(chunk)
    })
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = new URL(target)
  url.hostname = '127.0.0.1'
  url.port = String((server.address() as net.AddressInfo).port)
  return {
    url: url.toString(),
    freeze: (scope) => freeze(scope),
    freezeAt(text, {nth = 1, how = 'deliver'} = {}) {
      return new Promise<void>((resolve) => (trigger = {text, nth, how, done: resolve}))
    },
    get frozen() {
      return state.frozen
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
