/**
 * Import cycles among the files of `src/`: strongly connected components of the graph of
 * relative imports (type-only and dynamic ones included, as in import-layers.ts). A cycle makes
 * module load order matter and hides which of two files is the lower one; the tree has none.
 */
import { dirname, relative, resolve } from "node:path";
import { importedSpecifiers } from "./import-layers.ts";

/**
 * Every cycle of `files` (paths relative to `srcDir`), each as its files sorted by path, the
 * cycles sorted by their first file. Tarjan's algorithm, iterative so a deep chain cannot
 * overflow the stack.
 */
export function importCycles(
  srcDir: string,
  files: Iterable<{ path: string; text: string }>,
): string[][] {
  const edges = new Map<string, string[]>();
  for (const file of files) {
    edges.set(
      file.path,
      importedSpecifiers(file.text).map((s) =>
        relative(srcDir, resolve(srcDir, dirname(file.path), s))
      ),
    );
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let next = 0;
  for (const root of edges.keys()) {
    if (index.has(root)) continue;
    const work: { node: string; edge: number }[] = [{ node: root, edge: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const targets = edges.get(frame.node)!;
      if (frame.edge < targets.length) {
        const to = targets[frame.edge++];
        if (!edges.has(to)) continue;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent)!, low.get(frame.node)!));
      }
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.node);
      const selfImport = edges.get(frame.node)!.includes(frame.node);
      if (component.length > 1 || selfImport) cycles.push(component.sort());
    }
  }
  return cycles.sort((a, b) => a[0].localeCompare(b[0]));
}
