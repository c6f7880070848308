// The controller's view for the gRPC authorizer (libs/server/auth): ACLs, SCRAM users and topic
// names straight from its metadata state machine, rebuilt only when the metadata version moves
// (a check reads the view on every call). A follower answers from what it has applied, which
// trails the leader by one Raft round: well within the second an ACL change may take.
import type { SecurityView } from "../../libs/server/auth/security-view.js";
import { aclEntries } from "./acl-store.js";
import type { MetadataStateMachine } from "./metadata-state-machine.js";
import { scramCredentialsOf } from "./scram-users.js";

export function controllerSecurityView(sm: MetadataStateMachine): SecurityView {
  let cached:
    | {
        version: bigint;
        view: {
          acls: ReturnType<typeof aclEntries>;
          scram: ReturnType<typeof scramCredentialsOf>;
          topics: string[];
        };
      }
    | undefined;
  const current = (): NonNullable<typeof cached>["view"] => {
    const version = sm.version();
    if (cached?.version !== version) {
      const topics = sm
        .metadata(-1)
        .topics.filter((t) => !t.internal)
        .map((t) => t.name);
      cached = {
        version,
        view: {
          acls: aclEntries(sm.aclStore()),
          scram: scramCredentialsOf(sm.scramCredentials()),
          topics,
        },
      };
    }
    return cached.view;
  };
  return {
    loaded: () => true,
    acls: () => current().acls,
    scramCredentials: () => current().scram,
    topicNames: () => current().topics,
  };
}
