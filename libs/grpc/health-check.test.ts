// The hand-made grpc.health.v1 codec agrees with grpc-health-check's generated one (what every
// tern server answers with), so the SDK can drop that package.
import { service as healthService } from "grpc-health-check";
import { describe, expect, it } from "vitest";
import { decodeCheckResponse, encodeCheckRequest } from "./health-check.js";

describe("health check codec", () => {
  it("encodes requests as the generated serializer does", () => {
    for (const service of ["", "tern.v1.Broker", "x".repeat(300)]) {
      const expected = healthService.Check!.requestSerialize({ service });
      expect(encodeCheckRequest(service).equals(expected), service.slice(0, 20)).toBe(true);
    }
  });

  it("decodes every serving status the generated serializer writes", () => {
    for (const status of ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"] as const) {
      const bytes = healthService.Check!.responseSerialize({ status });
      expect(decodeCheckResponse(bytes)).toBe(status);
    }
  });

  it("skips fields it does not know and refuses a truncated answer", () => {
    // field 2 (length-delimited, 3 bytes) then status = SERVING
    expect(decodeCheckResponse(Buffer.from([0x12, 3, 1, 2, 3, 0x08, 1]))).toBe("SERVING");
    expect(() => decodeCheckResponse(Buffer.from([0x08, 0x80]))).toThrow(/malformed/);
  });
});
