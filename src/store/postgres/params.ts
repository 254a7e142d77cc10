/**
 * Bound values for a statement whose text is assembled from optional parts (filters): each value
 * added returns its `$n` placeholder, so numbering can never drift from the values array.
 */
export class Params {
  readonly values: unknown[] = []

  add(value: unknown): string {
    this.values.push(value)
    return `$${this.values.length}`
  }
}
