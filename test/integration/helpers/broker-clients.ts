// One BrokerClient per broker address for a test file, closed together in afterAll.
import { BrokerClient } from "../../../services/broker/broker-client.js";

export class BrokerClients {
  private readonly byAddress = new Map<string, BrokerClient>();

  get(address: string): BrokerClient {
    let c = this.byAddress.get(address);
    if (!c) this.byAddress.set(address, (c = new BrokerClient(address)));
    return c;
  }

  closeAll(): void {
    for (const c of this.byAddress.values()) c.close();
    this.byAddress.clear();
  }
}
