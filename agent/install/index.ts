export { SshSession, fingerprint, shellQuote } from "./ssh-session";
export type { SshTarget, RunResult } from "./ssh-session";
export { gatherFacts } from "./facts";
export type { HostFacts } from "./facts";
export { installAgent, fileSha256, PATHS } from "./agent-installer";
export type { AgentInstallPlan, AgentConfigContent, InstallResult } from "./agent-installer";
