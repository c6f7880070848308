// What a process's own log says about a Raft group's membership: the newest "replica
// membership" line for the group (voters as that process applied them). Reads the whole log
// file; a line cut by a SIGKILL is skipped.
import { readFileSync } from "node:fs";

export function loggedVoters(logFile: string, groupId: string): number[] | undefined {
  let text: string;
  try {
    text = readFileSync(logFile, "utf8");
  } catch {
    return undefined;
  }
  let voters: number[] | undefined;
  for (const line of text.split("\n")) {
    if (!line.includes("replica membership") || !line.includes(groupId)) continue;
    try {
      const o = JSON.parse(line) as { groupId?: string; voters?: number[] };
      if (o.groupId === groupId && Array.isArray(o.voters)) voters = o.voters;
    } catch {
      // a line cut by the kill
    }
  }
  return voters;
}
