// Each client's channels are secured by what that client was given: one client with TLS and a
// password and another without TLS live side by side in one process, and neither changes the
// other (there is no process-wide setting for an SDK client to read).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Admin } from "../client/index.js";
import { ensureClusterCa } from "../../scripts/cluster/tls-material.js";
import { clientChannelCredentials, openClientTls } from "./client-credentials.js";

const dir = mkdtempSync(join(tmpdir(), "tern-client-credentials-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ALICE = { username: "alice", password: "secret" };

describe("client credentials", () => {
  it("sends a password over TLS only", () => {
    const ca = ensureClusterCa(dir);
    const tls = openClientTls({
      caFile: ca.caFile,
      certFile: ca.client.certFile,
      keyFile: ca.client.keyFile,
    });
    expect(clientChannelCredentials(tls).tlsEnabled).toBe(true);
    expect(() => clientChannelCredentials(tls).channel(ALICE)).not.toThrow();
    expect(clientChannelCredentials(undefined).tlsEnabled).toBe(false);
    expect(() => clientChannelCredentials(undefined).channel(ALICE)).toThrow(/only sent over TLS/);
    expect(() => clientChannelCredentials(undefined, ALICE).channel()).toThrow(/over TLS/);
  });

  it("are per client: a TLS client does not lend its TLS to the next one", async () => {
    const ca = ensureClusterCa(dir);
    const withTls = new Admin({
      bootstrap: "127.0.0.1:1",
      tls: { caFile: ca.caFile },
      credentials: ALICE,
    });
    expect(() => new Admin({ bootstrap: "127.0.0.1:1", credentials: ALICE })).toThrow(
      expect.objectContaining({ code: "INVALID_CONFIG" }),
    );
    expect(
      () => new Admin({ bootstrap: "127.0.0.1:1", tls: { caFile: join(dir, "nope") } }),
    ).toThrow(expect.objectContaining({ code: "INVALID_CONFIG" }));
    await withTls.close();
  });
});
