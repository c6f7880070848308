import { describe, expect, it } from "vitest";
import { controllersFlag, planCluster, serviceArgs } from "./layout.js";

const shape = { controllers: 3, brokers: 3, coordinators: 3 };

describe("local cluster layout", () => {
  it("uses the documented default ports", () => {
    const specs = planCluster({ dataDir: "/d", basePort: 9090, shape });
    expect(specs.map((s) => `${s.role}-${s.id}:${s.port}/${s.metricsPort}`)).toEqual([
      "controller-0:9090/10090",
      "controller-1:9091/10091",
      "controller-2:9092/10092",
      "broker-0:9190/10190",
      "broker-1:9191/10191",
      "broker-2:9192/10192",
      "coordinator-0:9290/10290",
      "coordinator-1:9291/10291",
      "coordinator-2:9292/10292",
    ]);
    expect(specs[4]).toMatchObject({
      dataDir: "/d/broker-1",
      logFile: "/d/logs/broker-1.log",
      address: "127.0.0.1:9191",
    });
  });

  it("moves every port with the base port and never reuses one", () => {
    const specs = planCluster({ dataDir: "/d", basePort: 30000, shape });
    const ports = specs.flatMap((s) => [
      s.port,
      s.metricsPort,
      ...(s.kafkaPort === undefined ? [] : [s.kafkaPort]),
    ]);
    expect(new Set(ports).size).toBe(ports.length);
    expect(Math.min(...ports)).toBe(30000);
  });

  it("builds the controller quorum flag and the process arguments", () => {
    const specs = planCluster({ dataDir: "/d", basePort: 9090, shape });
    const controllers = controllersFlag(specs);
    expect(controllers).toBe("0@127.0.0.1:9090,1@127.0.0.1:9091,2@127.0.0.1:9092");
    expect(serviceArgs(specs[6]!, controllers)).toEqual([
      "--node-id",
      "0",
      "--listen",
      "127.0.0.1:9290",
      "--metrics-listen",
      "127.0.0.1:10290",
      "--kafka-listen",
      "127.0.0.1:9490",
      "--controllers",
      controllers,
      "--data-dir",
      "/d/coordinator-0",
    ]);
    // Brokers and coordinators have Kafka listeners (gRPC port + 200), controllers none.
    expect(specs.map((s) => s.kafkaPort ?? "-")).toEqual([
      "-",
      "-",
      "-",
      9390,
      9391,
      9392,
      9490,
      9491,
      9492,
    ]);
  });

  it("rejects shapes and bases outside the limits", () => {
    expect(() => planCluster({ dataDir: "/d", basePort: 65000, shape })).toThrow(
      /outside 1..65535/,
    );
    expect(() =>
      planCluster({ dataDir: "/d", basePort: 9090, shape: { ...shape, brokers: 51 } }),
    ).toThrow(/broker count/);
  });
});
