/** Lines added and removed, as the audit entry counts them. */
export interface LineChanges {
  added: number;
  removed: number;
}

const splitLines = (text: string): string[] => {
  if (text === "") return [];
  const lines = text.split("\n");
  if (text.endsWith("\n")) lines.pop();
  return lines;
};

/**
 * Lines added and removed between two normalized exports as a multiset difference: linear in the
 * texts, exact unless lines moved (a moved line counts as unchanged). No imports: the counting
 * thread loads it too.
 */
export const countLinesMultiset = (previous: string, next: string): LineChanges => {
  const counts = new Map<string, number>();
  for (const line of splitLines(previous)) counts.set(line, (counts.get(line) ?? 0) + 1);
  let added = 0;
  for (const line of splitLines(next)) {
    const left = counts.get(line) ?? 0;
    if (left > 0) counts.set(line, left - 1);
    else added++;
  }
  let removed = 0;
  for (const left of counts.values()) removed += left;
  return { added, removed };
};

/** Lines added and removed in a line diff's parts (jsdiff's `diffLines`). */
export const countDiffParts = (
  parts: ReadonlyArray<{ added: boolean; removed: boolean; count: number }>,
): LineChanges => {
  const changes = { added: 0, removed: 0 };
  for (const part of parts) {
    if (part.added) changes.added += part.count;
    else if (part.removed) changes.removed += part.count;
  }
  return changes;
};
