import {mkdtemp, readdir, rm, writeFile} from 'node:fs/promises'
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import os from 'node:os'
import path from 'node:path'

import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import {envelope, runCli, startCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario, writeFootprint} from '../support/scenario.js'

/**
 * Delivery of the COMPLETE events against a real collector on 127.0.0.1 that the test makes slow,
 * silent, down or flapping: no completion waits on it, a request whose body went out is never
 * sent again blindly (maybe delivered, kept apart), nothing unconfirmed is lost (the spool), and
 * `lineage resend` delivers exactly what is missing.
 */
let db: TestDatabase
let home: string

/**
 * A collector: it records each POST's run id, and answers as `answer` says (hold: answer later, or
 * never; a number: answer 201 after that many milliseconds).
 */
class Collector {
  readonly runIds: string[] = []
  /** Every POST's run id, answered or not, in the order they arrived. */
  readonly posts: string[] = []
  /** Each confirmed event's outputs, by run id. */
  readonly outputs = new Map<string, unknown[]>()
  answer: 'ok' | 'hold' | 'never' | 'flap' | number = 'ok'
  /** The most POSTs received and not yet answered at any moment. */
  maxInFlight = 0
  /** Called as each POST arrives, before it is answered. */
  onPost: ((runId: string) => void) | undefined
  private inFlight = 0
  private held: http.ServerResponse[] = []
  private readonly flapped = new Set<string>()
  private readonly server = http.createServer((req, res) => {
    let text = ''
    req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')))
    req.on('end', () => {
      const event = JSON.parse(text) as {run: {runId: string}; outputs: unknown[]}
      const runId = event.run.runId
      this.outputs.set(runId, event.outputs)
      this.posts.push(runId)
      this.onPost?.(runId)
      this.maxInFlight = Math.max(this.maxInFlight, ++this.inFlight)
      res.on('close', () => this.inFlight--)
      if (this.answer === 'never') return void this.held.push(res)
      if (this.answer === 'hold') {
        this.runIds.push(runId)
        return void this.held.push(res)
      }
      if (typeof this.answer === 'number') {
        const ms = this.answer
        this.held.push(res)
        setTimeout(() => {
          if (res.destroyed) return
          this.runIds.push(runId)
          res.writeHead(201).end()
        }, ms)
        return
      }
      // Flapping: each event's first request is answered 503 or 429 (retried by the sender; a
      // connection dropped once the request was read whole is not: it may have been stored).
      if (this.answer === 'flap' && !this.flapped.has(runId)) {
        this.flapped.add(runId)
        res.writeHead(this.posts.length % 2 === 0 ? 503 : 429).end()
        return
      }
      this.runIds.push(runId)
      res.writeHead(201).end()
    })
  })

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  /** Answers every request held so far. */
  release(): void {
    for (const res of this.held.splice(0)) res.writeHead(201).end()
  }

  async stop(): Promise<void> {
    for (const res of this.held.splice(0)) res.destroy()
    this.server.closeAllConnections()
    await new Promise((resolve) => this.server.close(resolve))
  }
}

let collector: Collector
let url: string
beforeAll(async () => {
  db = await createTestDatabase('3.0')
})
afterAll(async () => db?.drop())
afterEach(async () => {
  await collector?.stop()
  if (home) await rm(home, {recursive: true, force: true})
})

async function setUp(tasks: number) {
  home = await mkdtemp(path.join(os.tmpdir(), 'airlock-home-'))
  collector = new Collector()
  url = await collector.start()
  await scenario(db.knex).producer('etl', {tasks, outlets: 1}).build()
}

const env = (extra: Record<string, string> = {}) => ({OPENLINEAGE_URL: url, AIRLOCK_HOME: home, ...extra})
const completeArgs = () => ['complete', '--database-url', db.url, '--dag-id', 'etl', '--yes', '--concurrency', '1']
/** The spool's files by state: `{run id}.json` not delivered, `{run id}.maybe-delivered.json` maybe delivered. */
const spoolStates = async () => {
  const names = await readdir(path.join(home, 'lineage-spool')).catch(() => [])
  const of = (suffix: string) =>
    names
      .filter((name) => /^[0-9a-f-]{36}\./.test(name) && name.slice(36) === suffix)
      .map((name) => name.slice(0, 36))
      .sort()
  return {notDelivered: of('.json'), maybeDelivered: of('.maybe-delivered.json')}
}
/** Every event the spool holds, whatever its state. */
const spooled = async () => {
  const {notDelivered, maybeDelivered} = await spoolStates()
  return [...notDelivered, ...maybeDelivered].sort()
}
const postsPerRunId = (posts: string[]) => {
  const counts = new Map<string, number>()
  for (const runId of posts) counts.set(runId, (counts.get(runId) ?? 0) + 1)
  return [...counts.values()]
}

interface Summary {
  type: string
  lineage?: Record<string, number>
}

describe('delivering COMPLETE events', () => {
  it('no completion waits on the collector: every item is done while the collector has answered none', async () => {
    await setUp(10)
    collector.answer = 'hold'
    const running = startCli([...completeArgs(), '--ndjson'], {env: env()})
    let out = ''
    await new Promise<void>((resolve) => {
      running.child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        if (out.split('"type":"item"').length > 10) resolve()
      })
    })
    // All ten committed and reported; the collector has received some and answered none.
    expect(Number((await db.knex('task_instance').where({state: 'success'}).count({n: '*'}))[0]!.n)).toBe(10)
    collector.answer = 'ok'
    collector.release()
    const result = await running.finished
    expect(result.code, result.stderr).toBe(0)
    const summary = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Summary)
      .find((line) => line.type === 'summary')!
    expect(summary.lineage).toEqual({sent: 10, maybe_delivered: 0, failed: 0, not_tried: 0})
    expect(new Set(collector.runIds).size).toBe(10)
    expect(await spooled()).toEqual([])
  })

  it('a collector that answers after the timeout: one POST per event, maybe delivered, kept apart; resend leaves it unless --include-maybe-delivered', async () => {
    await setUp(3)
    collector.answer = 1500
    const result = await runCli([...completeArgs(), '--json'], {env: env({OPENLINEAGE__TRANSPORT__TIMEOUT: '0.5'})})
    expect(result.code, result.stderr).toBe(0)
    const report = (
      envelope(result) as {
        result: {lineage: Record<string, number>; lineage_first_failure: string; lineage_resend: string[]}
      }
    ).result
    expect(report.lineage).toEqual({sent: 0, maybe_delivered: 3, failed: 0, not_tried: 0})
    expect(report.lineage_first_failure).toMatch(/: maybe delivered: no answer within 500 ms after the body was sent$/)
    // The retries the transport allows (2 by default) were not used: the body had gone out.
    await new Promise((resolve) => setTimeout(resolve, 1000))
    expect(collector.posts).toHaveLength(3)
    expect(postsPerRunId(collector.posts)).toEqual([1, 1, 1])
    const held = await spoolStates()
    expect(held).toEqual({notDelivered: [], maybeDelivered: [...new Set(collector.posts)].sort()})
    // How to resend: what the default sends, and the flag that sends the maybe-delivered too.
    expect(report.lineage_resend).toEqual([
      'airlock lineage resend',
      'airlock lineage resend --include-maybe-delivered',
    ])

    collector.answer = 'ok'
    const dry = await runCli(['lineage', 'resend', '--dry-run', '--json'], {env: env()})
    expect(dry.code, dry.stderr).toBe(0)
    type Resent = {result: {items: Array<{run_id: string; outcome: string; state: string}>}}
    const listed = (envelope(dry) as Resent).result.items
    expect(listed.map((item) => [item.state, item.outcome])).toEqual(
      Array(3).fill(['maybe_delivered', 'held_maybe_delivered']),
    )
    const left = await runCli(['lineage', 'resend', '--json'], {env: env()})
    // Left in the spool, for the operator to decide: exit 5, nothing sent.
    expect(left.code, left.stderr).toBe(5)
    expect((envelope(left) as Resent).result.items.map((item) => item.outcome)).toEqual(
      Array(3).fill('held_maybe_delivered'),
    )
    expect(collector.posts).toHaveLength(3)
    expect(await spoolStates()).toEqual(held)
    const human = await runCli(['lineage', 'resend'], {env: env()})
    expect(human.stdout).toContain('--include-maybe-delivered')

    const sent = await runCli(['lineage', 'resend', '--include-maybe-delivered', '--json'], {env: env()})
    expect(sent.code, sent.stderr).toBe(0)
    expect((envelope(sent) as Resent).result.items.map((item) => item.outcome)).toEqual(Array(3).fill('sent'))
    expect(postsPerRunId(collector.posts)).toEqual([2, 2, 2])
    expect(await spooled()).toEqual([])
  })

  it('a dozen completions to a collector answering in 2 s: sent many at once, from before the last commit, all confirmed', async () => {
    await setUp(12)
    collector.answer = 2000
    // How many task instances were committed when the first POST arrived (read right then, so
    // at least as many as at its arrival).
    let committedAtFirstPost: Promise<number> | undefined
    collector.onPost = () => {
      committedAtFirstPost ??= db
        .knex('task_instance')
        .where({state: 'success'})
        .count({n: '*'})
        .then((rows) => Number(rows[0]!.n))
    }
    const result = await runCli([...completeArgs(), '--json'], {env: env()})
    expect(result.code, result.stderr).toBe(0)
    const report = (envelope(result) as {result: {lineage: Record<string, number>; lineage_spool?: string}}).result
    expect(report.lineage).toEqual({sent: 12, maybe_delivered: 0, failed: 0, not_tried: 0})
    expect(report.lineage_spool).toBeUndefined()
    expect(postsPerRunId(collector.posts)).toEqual(Array(12).fill(1))
    expect(await committedAtFirstPost).toBeLessThan(12)
    // Four at a time would make a dozen at 2 s each take 6 s after the last commit.
    expect(collector.maxInFlight).toBeGreaterThanOrEqual(8)
    expect(await spooled()).toEqual([])
  })

  it('--lineage-wait bounds the end of the run: what is not confirmed by then stays in the spool, and the summary says how to send it', async () => {
    await setUp(20)
    collector.answer = 'never'
    // A collector that never answers and a 10-minute timeout: only the wait ends the run.
    const result = await runCli([...completeArgs(), '--json', '--lineage-wait', '1s'], {
      env: env({OPENLINEAGE__TRANSPORT__TIMEOUT: '600'}),
    })
    expect(result.code, result.stderr).toBe(0)
    const report = (
      envelope(result) as {
        result: {lineage: Record<string, number>; lineage_spool: string; lineage_resend: string[]}
      }
    ).result
    const {sent, maybe_delivered: maybe, failed, not_tried: notTried} = report.lineage
    expect({sent, failed}).toEqual({sent: 0, failed: 0})
    expect(maybe! + notTried!).toBe(20)
    // Those sent and cut short when the wait ended went out whole: maybe delivered, kept apart.
    const states = await spoolStates()
    expect(states.maybeDelivered).toHaveLength(maybe!)
    expect(states.maybeDelivered).toEqual([...new Set(collector.posts)].sort())
    expect(states.notDelivered).toHaveLength(notTried!)
    expect(report.lineage_spool).toBe(path.join(home, 'lineage-spool'))
    expect(report.lineage_resend[0]).toBe('airlock lineage resend')
    // The human summary names the count and the command.
    await scenario(db.knex).producer('etl', {tasks: 2, outlets: 1}).build()
    const human = await runCli(
      [...completeArgs(), '--lineage-wait', '500ms', '--lineage-spool', path.join(home, 'other')],
      {
        env: env({OPENLINEAGE__TRANSPORT__TIMEOUT: '600'}),
      },
    )
    expect(human.code, human.stderr).toBe(0)
    expect(human.stdout).toContain(`2 COMPLETE events not confirmed are kept in ${path.join(home, 'other')}`)
    expect(human.stdout).toContain(`airlock lineage resend --lineage-spool ${path.join(home, 'other')}`)
  })

  it('a collector that is down: nothing lost; a re-run of complete sends nothing, lineage resend delivers each event exactly once', async () => {
    await setUp(5)
    await collector.stop()
    const result = await runCli([...completeArgs(), '--json'], {env: env()})
    expect(result.code).toBe(0)
    // Refused: retried, then failed (it cannot have arrived), or not tried once three in a row
    // were refused; all kept as not delivered, which a plain resend sends.
    const report = (envelope(result) as {result: {lineage: Record<string, number>; lineage_first_failure: string}})
      .result
    const lineage = report.lineage
    expect(report.lineage_first_failure).toMatch(/: failed: ECONNREFUSED after 3 attempts$/)
    expect(lineage).toMatchObject({sent: 0, maybe_delivered: 0})
    expect(lineage.failed! + lineage.not_tried!).toBe(5)
    expect(lineage.failed).toBeGreaterThanOrEqual(3)
    const waiting = await spooled()
    expect(waiting).toHaveLength(5)
    expect((await spoolStates()).maybeDelivered).toEqual([])
    // The re-run selects nothing (the five are success now, so not selected) and sends nothing.
    const rerun = await runCli([...completeArgs(), '--json'], {env: env()})
    expect((envelope(rerun) as {result: {summary: Record<string, number>}}).result.summary).toMatchObject({
      selected: 0,
      not_selected: 5,
    })

    collector = new Collector()
    url = await collector.start()
    const dry = await runCli(['lineage', 'resend', '--dry-run', '--json'], {env: env()})
    expect(dry.code).toBe(0)
    expect(collector.runIds).toEqual([])
    const listed = (envelope(dry) as {result: {items: Array<{run_id: string; outcome: string}>}}).result.items
    expect(listed.map((item) => item.run_id).sort()).toEqual(waiting)
    expect(listed.every((item) => item.outcome === 'would_send')).toBe(true)

    const resent = await runCli(['lineage', 'resend', '--json'], {env: env()})
    expect(resent.code, resent.stderr).toBe(0)
    expect([...collector.runIds].sort()).toEqual(waiting)
    expect(await spooled()).toEqual([])
    // Nothing is left: a second resend sends nothing.
    const again = await runCli(['lineage', 'resend'], {env: env()})
    expect(again.code).toBe(0)
    expect(again.stdout).toContain('Nothing to send')
    expect(collector.runIds).toHaveLength(5)
  })

  it('a flapping collector: the retries deliver every event, each run id confirmed once', async () => {
    await setUp(6)
    collector.answer = 'flap'
    const result = await runCli([...completeArgs(), '--json'], {
      env: env({OPENLINEAGE__TRANSPORT__RETRY__BACKOFF_FACTOR: '0.01'}),
    })
    expect(result.code).toBe(0)
    expect((envelope(result) as {result: {lineage: Record<string, number>}}).result.lineage).toMatchObject({sent: 6})
    expect(collector.runIds).toHaveLength(6)
    expect(new Set(collector.runIds).size).toBe(6)
    expect(await spooled()).toEqual([])
  })

  it("what the provider's filters skip gets no COMPLETE: disabled_for_operators, and selective_enable without an enable", async () => {
    await setUp(3)
    const run = async (extra: Record<string, string>) => {
      const result = await runCli([...completeArgs(), '--json'], {env: env(extra)})
      expect(result.code, result.stderr).toBe(0)
      return (envelope(result) as {result: {lineage: Record<string, number>}}).result.lineage
    }
    const disabled = await run({
      AIRFLOW__OPENLINEAGE__DISABLED_FOR_OPERATORS:
        'x.Other;airflow.providers.standard.operators.python.PythonOperator',
    })
    expect(disabled).toEqual({sent: 0, maybe_delivered: 0, failed: 0, not_tried: 0, skipped: 3})
    await scenario(db.knex).producer('etl', {tasks: 3, outlets: 1}).build()
    expect(await run({AIRFLOW__OPENLINEAGE__SELECTIVE_ENABLE: 'true'})).toMatchObject({sent: 0, skipped: 3})
    expect(collector.runIds).toEqual([])
    expect(await spooled()).toEqual([])
    // [openlineage] emission_policy (provider 2.19.0+): a rule turning the DAG's task events off.
    await scenario(db.knex).producer('etl', {tasks: 3, outlets: 1}).build()
    const off = '[{"scope": {"dag_id": "etl"}, "controls": {"emit_task_events": false}}]'
    expect(await run({AIRFLOW__OPENLINEAGE__EMISSION_POLICY: off})).toMatchObject({sent: 0, skipped: 3})
    expect(collector.runIds).toEqual([])
    // extract_operator_metadata false: sent, but without the outputs the extractor manager would give.
    await scenario(db.knex).producer('etl', {tasks: 3, outlets: 1}).build()
    const bare = '[{"scope": {}, "controls": {"extract_operator_metadata": false}}]'
    expect(await run({AIRFLOW__OPENLINEAGE__EMISSION_POLICY: bare})).toMatchObject({sent: 3})
    expect([...collector.outputs.values()]).toEqual([[], [], []])
    collector.outputs.clear()
    // The same task instances, filters off: sent, each with its outlet's dataset.
    await scenario(db.knex).producer('etl', {tasks: 3, outlets: 1}).build()
    expect(await run({})).toEqual({sent: 3, maybe_delivered: 0, failed: 0, not_tried: 0})
    expect([...collector.outputs.values()].map((outputs) => outputs.length)).toEqual([1, 1, 1])
  })

  it('a spool that cannot be one is exit 2 before anything is written; a dry run leaves it alone', async () => {
    await setUp(2)
    const file = path.join(home, 'not-a-directory')
    await writeFile(file, '')
    const footprint = await writeFootprint(db.knex)
    const refused = await runCli([...completeArgs(), '--json', '--lineage-spool', file], {env: env()})
    expect(refused.code, refused.stdout + refused.stderr).toBe(2)
    expect(JSON.stringify(envelope(refused))).toContain(`The lineage spool ${file} cannot be used`)
    expect(await writeFootprint(db.knex)).toEqual(footprint)
    const dry = await runCli([...completeArgs(), '--json', '--dry-run', '--lineage-spool', file], {env: env()})
    expect(dry.code, dry.stderr).toBe(0)
    expect(collector.runIds).toEqual([])
  })

  it('lineage resend --since leaves out a completion airlock undo took back, even once the task instance is success again', async () => {
    await setUp(2)
    const done = await runCli([...completeArgs(), '--no-lineage', '--json'])
    expect(done.code, done.stderr).toBe(0)
    const [first] = (envelope(done) as {result: {items: Array<{log_id: number; ti_id: string}>}}).result.items
    const undone = await runCli([
      'undo',
      '--database-url',
      db.url,
      '--log-id',
      String(first!.log_id),
      '--yes',
      '--json',
    ])
    expect(undone.code, undone.stderr).toBe(0)
    // Then marked success in the UI: success again, but not by airlock's completion.
    await db.knex('task_instance').where({id: first!.ti_id}).update({state: 'success'})
    const args = ['lineage', 'resend', '--database-url', db.url, '--dag-id', 'etl', '--since', '1h']
    const dry = await runCli([...args, '--dry-run', '--json'], {env: env()})
    expect(dry.code, dry.stderr).toBe(0)
    const items = (envelope(dry) as {result: {items: Array<{ti_id: string}>}}).result.items
    expect(items).toHaveLength(1)
    expect(items[0]!.ti_id).not.toBe(first!.ti_id)
    expect(collector.runIds).toEqual([])
  })

  it('a lost spool is rebuilt from the database: lineage resend --since sends the COMPLETE of every try airlock completed, once each', async () => {
    await setUp(4)
    const done = await runCli([...completeArgs(), '--no-lineage'])
    expect(done.code).toBe(0)
    expect(collector.runIds).toEqual([])
    const args = ['lineage', 'resend', '--database-url', db.url, '--dag-id', 'etl', '--since', '1h']
    const dry = await runCli([...args, '--dry-run', '--json'], {env: env()})
    expect(dry.code, dry.stderr).toBe(0)
    expect((envelope(dry) as {result: {items: unknown[]}}).result.items).toHaveLength(4)
    expect(collector.runIds).toEqual([])
    const rebuilt = await runCli([...args, '--json'], {env: env()})
    expect(rebuilt.code, rebuilt.stderr).toBe(0)
    expect(new Set(collector.runIds).size).toBe(4)
    expect(collector.runIds).toHaveLength(4)
    expect(await spooled()).toEqual([])
    // --dag-id without --since is a usage error: the spool or a window, never a guess.
    expect((await runCli(['lineage', 'resend', '--dag-id', 'etl'], {env: env()})).code).toBe(2)
    // --include-maybe-delivered chooses among the spool's events; a rebuild sends all it rebuilds.
    const both = await runCli([...args, '--include-maybe-delivered'], {env: env()})
    expect(both.code, both.stderr).toBe(2)
    expect(both.stderr).toContain('--include-maybe-delivered chooses among the spool')
    // A spool that cannot be one (a file, or a path under a file) is the operator's to fix: exit 2, nothing sent.
    const file = path.join(home, 'not-a-directory')
    await writeFile(file, '')
    for (const spool of [file, path.join(file, 'x')]) {
      const refused = await runCli(['lineage', 'resend', '--lineage-spool', spool], {env: env()})
      expect(refused.code, refused.stderr).toBe(2)
      expect(refused.stderr).toContain(`The lineage spool ${spool} cannot be used`)
    }
    expect(collector.runIds).toHaveLength(4)
  })
})
