/**
 * The npm package's bundle that a benchmark starts hosts or workers from, made by the same code
 * as `npm run compile` (compile/build.ts's `bundleCli`). The smoke run (`main.ts --smoke`) builds
 * it once and gives its path to every bench in PI_WORKFLOWS_BENCH_BUNDLE: a build in each of the
 * benches that use it cost about 3 CPU-seconds apiece and checked nothing the first did not.
 */
export const SHARED_BUNDLE_ENV = "PI_WORKFLOWS_BENCH_BUNDLE";

/**
 * The shared bundle when the smoke run made one, else a new one at `outfile`; its path. The
 * builder (esbuild) is loaded only to build.
 */
export async function benchBundle(outfile: string): Promise<string> {
  const shared = process.env[SHARED_BUNDLE_ENV];
  if (shared) return shared;
  const { bundleCli } = await import("../../compile/build.ts");
  return bundleCli(outfile);
}
