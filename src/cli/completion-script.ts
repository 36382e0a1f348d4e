/**
 * The bash and zsh completion scripts. What is fixed (commands, each command's options, which
 * options take a value, what a command's first argument is) is written into the script from
 * the help texts; workflow names and run ids are asked of `pi-workflows __complete` as the user
 * types, through the same program the user typed.
 */
import { COMMAND_HELP, MAIN_HELP } from "./usage.ts";

type FirstArg = "workflows" | "runs" | "active-runs" | readonly string[];

/** What the first argument of a command is; the rest complete files. */
const FIRST_ARG: Record<string, FirstArg> = {
  start: "workflows",
  status: "runs",
  logs: "runs",
  view: "runs",
  pause: "active-runs",
  resume: "active-runs",
  cancel: "active-runs",
  rerun: "runs",
  retry: "runs",
  answer: "active-runs",
  host: ["run", "start", "status", "stop"],
  completion: ["bash", "zsh"],
  effect: ["resolve"],
  schedule: ["add", "apply", "list", "show", "pause", "resume", "remove"],
};

/** Commands people type (the internal `worker` is left out). */
export function completionCommands(): string[] {
  return Object.keys(COMMAND_HELP).filter((name) => name !== "worker").sort();
}

/** The options a command's help documents, and which of them take a value. */
export function commandOptions(command: string): { flags: string[]; valued: string[] } {
  const flags = new Set(["--help"]);
  const valued = new Set<string>();
  for (
    const match of (COMMAND_HELP[command] ?? "").matchAll(
      // Not an option the text names as refused ("no --api-key").
      /(?<![\w-]|no )(--[a-z][a-z-]*)([ =][A-Z<])?/g,
    )
  ) {
    flags.add(match[1]);
    if (match[2]) valued.add(match[1]);
  }
  return { flags: [...flags].sort(), valued: [...valued].sort() };
}

export function completionScript(shell: "bash" | "zsh"): string {
  return shell === "bash" ? bashScript() : zshScript();
}

/** The command's line in the main help (`Start a run (...)`), or its help's first sentence. */
function commandSummary(command: string): string {
  for (const line of MAIN_HELP.split("\n")) {
    const match = /^ {2}(\S+)\b.*? {2,}(\S.*)$/.exec(line);
    if (match && match[1].split("|")[0] === command) return match[2];
  }
  return /^Usage: [^\n]*\n\n([^\n.]*)/.exec(COMMAND_HELP[command] ?? "")?.[1] ?? "";
}

function firstArgKind(command: string): string {
  const kind = FIRST_ARG[command];
  if (command === "help") return `words:${completionCommands().join(" ")}`;
  if (kind === undefined) return "files";
  return typeof kind === "string" ? kind : `words:${kind.join(" ")}`;
}

function allValued(): string {
  const valued = new Set<string>();
  for (const command of completionCommands()) {
    for (const flag of commandOptions(command).valued) valued.add(flag);
  }
  return [...valued].sort().join(" ");
}

function caseArms(value: (command: string) => string): string {
  return completionCommands().map((command) => `    ${command}) echo "${value(command)}" ;;`)
    .join("\n");
}

/** The shell functions both scripts define: each command's flags, its first argument's kind. */
function helperFunctions(): string {
  return `__pi_workflows_flags() {
  case "$1" in
${caseArms((c) => commandOptions(c).flags.join(" "))}
  esac
}
__pi_workflows_first() {
  case "$1" in
${caseArms(firstArgKind)}
    help) echo "words:${completionCommands().join(" ")}" ;;
  esac
}
`;
}

/**
 * Sets `kind` to what the word being typed is: the command's first argument when no positional
 * came before it (an option's value is skipped), else a file. Both shells take this syntax;
 * `words` is the shell's word array, `first` the index of the first word after the command.
 */
function argumentKind(words: string, first: number, current: string): string {
  return `  for ((i = ${first}; i < ${current}; i++)); do
    word="\${${words}[i]}"
    if [[ "$word" == -* ]]; then
      [[ "$valued" == *" $word "* ]] && ((i++))
      continue
    fi
    ((npos++))
  done
  kind="$(__pi_workflows_first "$cmd")"
  (( npos > 0 )) && kind=files
`;
}

function bashScript(): string {
  return `# bash completion for pi-workflows (pi-workflows completion bash)
${helperFunctions()}_pi_workflows() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  local cmd="\${COMP_WORDS[1]}" valued=" ${allValued()} " i word npos=0 kind
  COMPREPLY=()
  if (( COMP_CWORD == 1 )); then
    COMPREPLY=($(compgen -W "${completionCommands().join(" ")} help --help --version" -- "$cur"))
    return
  fi
  if [[ "$valued" == *" $prev "* ]]; then
    case "$prev" in
      --cwd) COMPREPLY=($(compgen -d -- "$cur")) ;;
      --input-file) COMPREPLY=($(compgen -f -- "$cur")) ;;
      --env) COMPREPLY=($(compgen -v -- "$cur")) ;;
    esac
    return
  fi
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(__pi_workflows_flags "$cmd")" -- "$cur"))
    return
  fi
${argumentKind("COMP_WORDS", 2, "COMP_CWORD")}  case "$kind" in
    words:*) COMPREPLY=($(compgen -W "\${kind#words:}" -- "$cur")) ;;
    workflows)
      COMPREPLY=($(compgen -W "$("\${COMP_WORDS[0]}" __complete workflows 2>/dev/null | cut -f1)" -- "$cur"))
      compopt -o filenames 2>/dev/null
      COMPREPLY+=($(compgen -f -X '!*.workflow.*' -- "$cur") $(compgen -d -- "$cur")) ;;
    runs|active-runs)
      local flag=""
      [[ "$kind" == active-runs ]] && flag=--active
      COMPREPLY=($(compgen -W "$("\${COMP_WORDS[0]}" __complete runs $flag 2>/dev/null | cut -f1)" -- "$cur")) ;;
    files) compopt -o default 2>/dev/null ;;
  esac
}
complete -F _pi_workflows pi-workflows
`;
}

function zshScript(): string {
  const describe = completionCommands().map((c) =>
    `    '${c}:${commandSummary(c).replace(/[':]/g, " ").slice(0, 70)}'`
  ).join("\n");
  return `#compdef pi-workflows
# zsh completion for pi-workflows (pi-workflows completion zsh)
${helperFunctions()}_pi-workflows() {
  local cur="\${words[CURRENT]}" prev="\${words[CURRENT-1]}" cmd="\${words[2]}"
  local valued=" ${allValued()} " kind word
  local -i i npos=0
  if (( CURRENT == 2 )); then
    local -a commands
    commands=(
${describe}
    )
    _describe command commands
    return
  fi
  if [[ "$valued" == *" $prev "* ]]; then
    case "$prev" in
      --cwd) _files -/ ;;
      --input-file) _files ;;
      --env) _parameters ;;
    esac
    return
  fi
  if [[ "$cur" == -* ]]; then
    compadd -- \${=$(__pi_workflows_flags "$cmd")}
    return
  fi
${argumentKind("words", 3, "CURRENT")}  case "$kind" in
    words:*) compadd -- \${=kind#words:} ;;
    workflows)
      local out
      local -a found
      out="$("\${words[1]}" __complete workflows 2>/dev/null | tr '\\t' ':')"
      [[ -n "$out" ]] && found=("\${(@f)out}") && _describe workflow found
      _files -g '*.workflow.*' ;;
    runs|active-runs)
      local out flag=""
      local -a found
      [[ "$kind" == active-runs ]] && flag=--active
      out="$("\${words[1]}" __complete runs $flag 2>/dev/null | tr '\\t' ':')"
      [[ -n "$out" ]] && found=("\${(@f)out}") && _describe run found ;;
    files) _files ;;
  esac
}
if [[ "\${funcstack[1]}" == "_pi-workflows" ]]; then
  _pi-workflows "$@"
else
  compdef _pi-workflows pi-workflows
fi
`;
}
