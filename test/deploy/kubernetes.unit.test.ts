import {readdirSync, readFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {Parser, type Command} from '@oclif/core'
import {CronJob} from 'kubernetes-models/batch/v1/CronJob'
import {Secret} from 'kubernetes-models/v1/Secret'
import {describe, expect, it} from 'vitest'
import {parseAllDocuments} from 'yaml'

import AuditEvents from '../../commands/audit-events.js'
import Explain from '../../commands/explain.js'
import {ExitCode} from '../../src/exitCodes.js'

/**
 * deploy/kubernetes/: the manifests operators copy. No cluster runs here, so each is checked
 * against Kubernetes' own schemas (kubernetes-models, generated from its OpenAPI definitions),
 * and what it says to airlock against airlock itself: the command and flags parse as the CLI
 * parses them, the exit codes are airlock's, the connection comes from the Secret beside it.
 */
const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'deploy', 'kubernetes')
const documents = readdirSync(dir)
  .filter((file) => file.endsWith('.yaml'))
  .flatMap((file) =>
    parseAllDocuments(readFileSync(path.join(dir, file), 'utf8')).map((doc) => ({
      file,
      object: doc.toJS() as {kind: string; metadata: {name: string}},
    })),
  )
const cronJobs = documents
  .filter((d) => d.object.kind === 'CronJob')
  .map((d) => ({...d, job: new CronJob(d.object as never)}))
const secrets = documents.filter((d) => d.object.kind === 'Secret').map((d) => new Secret(d.object as never))

// The read-only commands a manifest may schedule: the manifests never write (no --fix, no complete, no undo).
const commandClasses: Record<string, Command.Class> = {explain: Explain, 'audit-events': AuditEvents}

// A retry can change these: the database came back (7), a timeout passed (5).
const transient: number[] = [ExitCode.partialFailure, ExitCode.unreachable]

describe('the Kubernetes manifests', () => {
  it('are valid Kubernetes objects: two CronJobs and the Secret they read', () => {
    expect(cronJobs.map((c) => c.object.metadata.name).sort()).toEqual(['airlock-audit-events', 'airlock-explain'])
    expect(secrets).toHaveLength(1)
    for (const {job} of cronJobs) expect(() => job.validate()).not.toThrow()
    for (const secret of secrets) expect(() => secret.validate()).not.toThrow()
  })

  it.each(cronJobs.map((c) => [c.object.metadata.name, c] as const))(
    '%s runs an airlock command the CLI accepts, as the image user, reading the Secret, failing at once on what a retry cannot change',
    async (_name, {job}) => {
      const pod = job.spec!.jobTemplate.spec!.template.spec!
      const [container] = pod.containers
      const [command, ...argv] = container!.args!
      const commandClass = commandClasses[command!]
      expect(commandClass, `airlock ${command!}`).toBeDefined()
      // Unknown flags, bad option values and missing values fail here as they would in the pod.
      // The base command's flags (--json, --verbose, --no-color) with the command's own, as oclif parses them.
      const flags = {...commandClass!.baseFlags, ...commandClass!.flags}
      const parsed = await Parser.parse(argv, {flags, args: commandClass!.args ?? {}, strict: true})
      expect(parsed.flags['fail-on']).toEqual(expect.arrayContaining([expect.any(String)]))
      expect(argv).not.toContain('--fix')

      // The image's user (scripts/executable/image.mjs), not root, on a read-only root filesystem.
      expect(pod.securityContext).toMatchObject({runAsNonRoot: true, runAsUser: 65532})
      expect(container!.securityContext).toMatchObject({readOnlyRootFilesystem: true, allowPrivilegeEscalation: false})
      const secretName = container!.envFrom![0]!.secretRef!.name
      const secret = secrets.find((s) => s.metadata!.name === secretName)
      expect(Object.keys(secret!.stringData!)).toEqual(['AIRLOCK_DATABASE_URL'])

      const policy = job.spec!.jobTemplate.spec!.podFailurePolicy!.rules
      const failing = policy.flatMap((rule) => (rule.action === 'FailJob' ? rule.onExitCodes!.values : []))
      expect(failing).toContain(ExitCode.auditFindings)
      for (const code of failing) {
        expect(Object.values(ExitCode)).toContain(code)
        expect(transient).not.toContain(code)
      }
      expect(policy.every((rule) => rule.onExitCodes?.containerName === container!.name)).toBe(true)
      expect(pod.restartPolicy).toBe('Never')
    },
  )
})
