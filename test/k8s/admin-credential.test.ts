// The admin-credential Job's Secret handling (scripts/k8s/admin-credential.ts) against an
// in-memory stand-in for the Kubernetes Secrets API (there is no cluster here): the first run
// creates a random credential, later runs read the same one back, a run that loses the create
// race reads the winner's, and an API error stops it with the status.
import { describe, expect, it } from "vitest";
import { ensureCredential } from "../../scripts/k8s/admin-credential.js";

/** Secrets of one namespace, answering as the API server does (404, 201, 409). */
function secretsApi(options: { raceWinner?: Record<string, unknown>; failGet?: number } = {}) {
  const stored = new Map<string, any>();
  const calls: string[] = [];
  return {
    stored,
    calls,
    call: async (method: "GET" | "POST", path: string, body?: any) => {
      calls.push(`${method} ${path}`);
      if (options.failGet) return { status: options.failGet, body: { message: "forbidden" } };
      const name = path.split("/").pop()!;
      if (method === "GET")
        return stored.has(name)
          ? { status: 200, body: stored.get(name) }
          : { status: 404, body: {} };
      if (options.raceWinner) {
        stored.set(body.metadata.name, options.raceWinner);
        return { status: 409, body: {} };
      }
      stored.set(body.metadata.name, body);
      return { status: 201, body };
    },
  };
}

describe("admin credential Secret", () => {
  it("is created once with a random password and read back afterwards", async () => {
    const api = secretsApi();
    const first = await ensureCredential(api, "tern", "tern-admin-credential");
    expect(first.created).toBe(true);
    expect(first.credential.username).toBe("admin");
    expect(Buffer.from(first.credential.password, "base64url")).toHaveLength(32);
    expect(api.calls).toEqual([
      "GET /api/v1/namespaces/tern/secrets/tern-admin-credential",
      "POST /api/v1/namespaces/tern/secrets",
    ]);
    const again = await ensureCredential(api, "tern", "tern-admin-credential");
    expect(again).toEqual({ credential: first.credential, created: false });
    const other = await ensureCredential(secretsApi(), "tern", "tern-admin-credential");
    expect(other.credential.password).not.toBe(first.credential.password);
  });

  it("a lost create race reads the winner's credential; an API error stops with its status", async () => {
    const winner = {
      data: {
        username: Buffer.from("admin").toString("base64"),
        password: Buffer.from("theirs").toString("base64"),
      },
    };
    const raced = await ensureCredential(secretsApi({ raceWinner: winner }), "tern", "c");
    expect(raced).toEqual({
      credential: { username: "admin", password: "theirs" },
      created: false,
    });
    await expect(ensureCredential(secretsApi({ failGet: 403 }), "tern", "c")).rejects.toThrow(
      /reading Secret c: HTTP 403 forbidden/,
    );
  });
});
