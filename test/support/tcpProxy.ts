import net from 'node:net'

/**
 * A loopback TCP proxy in front of the test server that can cut a connection at the moment the
 * client sends COMMIT, either before the server sees it (the transaction is rolled back) or right
 * after (the server commits, the client never hears back): the two faces of "connection lost
 * during COMMIT".
 */
export interface CommitCutter {
  port: number
  /** Arm for the next COMMIT on any connection. */
  arm(mode: 'before' | 'after'): void
  cuts: number
  close(): Promise<void>
}

export async function startCommitCutter(target: {host: string; port: number}): Promise<CommitCutter> {
  let armed: 'before' | 'after' | null = null
  const sockets = new Set<net.Socket>()
  const state = {cuts: 0}
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host)
    sockets.add(client).add(upstream)
    const cut = () => {
      client.destroy()
      upstream.destroy()
    }

    client.on('data', (chunk) => {
      // A simple-protocol Query message: 'Q', int32 length, SQL text.
      const isCommit = chunk[0] === 0x51 && /^COMMIT/i.test(chunk.subarray(5).toString('utf8').trim())
      if (isCommit && armed) {
        const mode = armed
        armed = null
        state.cuts++
        if (mode === 'before') {
          cut()
          return
        }
        upstream.write(chunk, () => setImmediate(() => client.destroy()))
        return
      }

      upstream.write(chunk)
    })
    upstream.on('data', (chunk) => client.write(chunk))
    client.on('close', () => upstream.end())
    upstream.on('close', () => client.destroy())
    client.on('error', () => undefined)
    upstream.on('error', () => undefined)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address() as net.AddressInfo
  return {
    port: address.port,
    arm(mode) {
      armed = mode
    },
    get cuts() {
      return state.cuts
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
