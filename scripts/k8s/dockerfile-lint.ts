// Static checks of the Dockerfile (no Docker engine needed): it is multi-stage, the runtime
// stage is non-root with an exec-form ENTRYPOINT (so node, not a shell, is PID 1 and gets
// SIGTERM), and every file it copies from the context exists and is not .dockerignored.

export interface DockerInstruction {
  readonly keyword: string;
  readonly args: string;
  readonly line: number;
}

export interface DockerStage {
  readonly name: string | undefined;
  readonly image: string;
  readonly instructions: DockerInstruction[];
}

export interface DockerfileLintOptions {
  /** Whether a path relative to the build context exists. */
  readonly exists: (relativePath: string) => boolean;
  /** Lines of .dockerignore. */
  readonly dockerignore: readonly string[];
}

/** Splits a Dockerfile into stages of instructions, joining backslash continuations. */
export function parseDockerfile(text: string): {
  args: Map<string, string>;
  stages: DockerStage[];
} {
  const args = new Map<string, string>();
  const stages: DockerStage[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i]!;
    while (line.trimEnd().endsWith("\\") && i + 1 < lines.length)
      line = line.trimEnd().slice(0, -1) + " " + lines[++i]!;
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const m = /^(\S+)\s*(.*)$/.exec(trimmed)!;
    const instruction = { keyword: m[1]!.toUpperCase(), args: m[2]!, line: start + 1 };
    if (instruction.keyword === "ARG" && stages.length === 0) {
      const [name, value] = instruction.args.split("=", 2);
      args.set(name!, value ?? "");
    } else if (instruction.keyword === "FROM") {
      const from = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(instruction.args);
      const image = (from?.[1] ?? instruction.args).replace(
        /\$\{?(\w+)\}?/g,
        (_, n: string) => args.get(n) ?? "",
      );
      stages.push({ name: from?.[2], image, instructions: [] });
    } else if (stages.length > 0) {
      stages[stages.length - 1]!.instructions.push(instruction);
    }
  }
  return { args, stages };
}

/** .dockerignore patterns as regular expressions over context-relative paths. */
export function ignoreMatcher(lines: readonly string[]): (relativePath: string) => boolean {
  const patterns = lines
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#") && !l.startsWith("!"))
    .map((p) => new RegExp("^" + globToRegex(p.replace(/^\/|\/$/g, "")) + "(?:/.*)?$"));
  return (relativePath) => patterns.some((re) => re.test(relativePath.replace(/^\.\//, "")));
}

function globToRegex(glob: string): string {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (glob.startsWith("**/", i)) {
      out += "(?:.*/)?";
      i += 2;
    } else if (glob.startsWith("**", i)) {
      out += ".*";
      i += 1;
    } else if (c === "*") out += "[^/]*";
    else if (c === "?") out += "[^/]";
    else out += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return out;
}

function copySources(instruction: DockerInstruction): {
  from: string | undefined;
  sources: string[];
} {
  const words = instruction.args.trim().startsWith("[")
    ? (JSON.parse(instruction.args) as string[])
    : instruction.args.split(/\s+/);
  const flags = words.filter((w) => w.startsWith("--"));
  const paths = words.filter((w) => !w.startsWith("--"));
  const from = flags.find((f) => f.startsWith("--from="))?.slice("--from=".length);
  return { from, sources: paths.slice(0, -1) };
}

export function lintDockerfile(text: string, options: DockerfileLintOptions): string[] {
  const { stages } = parseDockerfile(text);
  const problems: string[] = [];
  if (stages.length < 2)
    problems.push("not multi-stage: build tools and dev dependencies would ship in the image");
  const final = stages[stages.length - 1];
  if (final === undefined) return [...problems, "no FROM"];
  const all = stages.flatMap((s) => s.instructions);
  const runs = (re: RegExp) => all.some((i) => i.keyword === "RUN" && re.test(i.args));
  if (!runs(/\bnpm ci\b/))
    problems.push("no stage runs `npm ci` (reproducible install from the lockfile)");
  if (!runs(/\bnpm run build\b/)) problems.push("no stage runs `npm run build`");
  if (!runs(/\bnpm (ci|prune)\b.*--omit=dev/))
    problems.push("no stage installs production dependencies only (--omit=dev)");
  if (!/^node:20\b/.test(final.image)) problems.push(`runtime image ${final.image} is not node:20`);
  if (final.instructions.some((i) => i.keyword === "RUN" && /\bnpm run build\b/.test(i.args)))
    problems.push("the runtime stage builds: compile in a build stage");
  const user = [...final.instructions]
    .reverse()
    .find((i) => i.keyword === "USER")
    ?.args.trim();
  if (user === undefined) problems.push("the runtime stage sets no USER: it would run as root");
  else if (/^(root|0)(:|$)/.test(user)) problems.push(`the runtime stage runs as ${user}`);
  else if (!/^\d+(:\d+)?$/.test(user))
    problems.push(`USER ${user} is not numeric: runAsNonRoot cannot verify a user name`);
  const entrypoint = final.instructions.find((i) => i.keyword === "ENTRYPOINT");
  if (entrypoint === undefined) problems.push("the runtime stage has no ENTRYPOINT");
  else if (!entrypoint.args.trim().startsWith("["))
    problems.push("ENTRYPOINT is in shell form: /bin/sh would be PID 1 and swallow SIGTERM");
  problems.push(...copyProblems(stages, options));
  return problems;
}

function copyProblems(stages: readonly DockerStage[], options: DockerfileLintOptions): string[] {
  const ignored = ignoreMatcher(options.dockerignore);
  const problems: string[] = [];
  stages.forEach((stage, index) => {
    const earlier = new Set(
      stages
        .slice(0, index)
        .map((s) => s.name)
        .filter((n) => n !== undefined),
    );
    for (const instruction of stage.instructions.filter(
      (i) => i.keyword === "COPY" || i.keyword === "ADD",
    )) {
      const { from, sources } = copySources(instruction);
      if (from !== undefined) {
        if (!earlier.has(from))
          problems.push(`line ${instruction.line}: COPY --from=${from} names no earlier stage`);
        continue;
      }
      for (const source of sources) {
        if (!options.exists(source))
          problems.push(`line ${instruction.line}: ${source} does not exist in the build context`);
        else if (ignored(source))
          problems.push(`line ${instruction.line}: ${source} is excluded by .dockerignore`);
      }
    }
  });
  return problems;
}

/** ENTRYPOINT, CMD (exec form), ENV and WORKDIR of the final stage: what a pod inherits. */
export function imageDefaults(text: string): {
  entrypoint: string[];
  cmd: string[];
  env: Record<string, string>;
  workingDir: string;
} {
  const { stages } = parseDockerfile(text);
  const final = stages[stages.length - 1];
  const result = {
    entrypoint: [] as string[],
    cmd: [] as string[],
    env: {} as Record<string, string>,
    workingDir: "/",
  };
  for (const i of final?.instructions ?? []) {
    if (i.keyword === "ENTRYPOINT") result.entrypoint = execForm(i);
    if (i.keyword === "CMD") result.cmd = execForm(i);
    if (i.keyword === "WORKDIR") result.workingDir = i.args.trim();
    if (i.keyword === "ENV") {
      for (const m of i.args.matchAll(/(\w+)=("[^"]*"|\S+)/g))
        result.env[m[1]!] = m[2]!.replace(/^"|"$/g, "");
    }
  }
  return result;
}

function execForm(instruction: DockerInstruction): string[] {
  const text = instruction.args.trim();
  return text.startsWith("[") ? (JSON.parse(text) as string[]) : ["/bin/sh", "-c", text];
}
