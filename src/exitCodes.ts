/**
 * The exit-code table (docs/exit-codes-and-json.md). Every command ends through the base command, which maps
 * outcomes and errors to one of these; nothing else calls process.exit.
 */
export const ExitCode = {
  ok: 0,
  internal: 1,
  usage: 2,
  conflict: 3,
  notFound: 4,
  partialFailure: 5,
  auditFindings: 6,
  unreachable: 7,
  unsupportedSchema: 8,
  /** doctor: the database user can read but lacks privileges a writer needs. */
  readOnly: 9,
  interrupted: 130,
} as const

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode]

/** When several item outcomes apply, the highest of 5, 4, 3 wins. */
export function worstItemExit(codes: Iterable<ExitCode>): ExitCode {
  let worst: ExitCode = ExitCode.ok
  for (const code of codes) {
    if (code === ExitCode.partialFailure) return code
    if (code === ExitCode.notFound) worst = code
    else if (code === ExitCode.conflict && worst === ExitCode.ok) worst = code
  }
  return worst
}
